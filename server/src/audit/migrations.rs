//! The audit database's schema, one migration per step, applied in order at start and each once;
//! the same SQL for SQLite and PostgreSQL.

/// The schema, one migration per step; applied in order at start, each once.
pub(super) const MIGRATIONS: [(i64, &str, &str); 14] = [
    (
        1,
        "audit log and deploy locks",
        "CREATE TABLE IF NOT EXISTS audit_log (
        id TEXT PRIMARY KEY,
        at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        resource TEXT NOT NULL,
        from_revision TEXT,
        to_revision TEXT,
        diff TEXT NOT NULL,
        pre_check TEXT,
        description TEXT,
        outcome TEXT NOT NULL,
        request_id TEXT,
        deployment_id TEXT,
        detail TEXT
    );
    CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at);
    CREATE INDEX IF NOT EXISTS audit_log_outcome ON audit_log (outcome);
    CREATE TABLE IF NOT EXISTS deploy_locks (
        resource TEXT PRIMARY KEY,
        audit_id TEXT NOT NULL,
        at TEXT NOT NULL
    );",
    ),
    (
        2,
        "who acted: email, role, sign-in and source address",
        "ALTER TABLE audit_log ADD COLUMN actor_email TEXT;
    ALTER TABLE audit_log ADD COLUMN actor_role TEXT;
    ALTER TABLE audit_log ADD COLUMN auth_mode TEXT;
    ALTER TABLE audit_log ADD COLUMN source TEXT;",
    ),
    (
        3,
        "replicas: the owner of records and locks, and who is alive",
        "ALTER TABLE audit_log ADD COLUMN owner TEXT;
    ALTER TABLE deploy_locks ADD COLUMN owner TEXT;
    CREATE TABLE IF NOT EXISTS replicas (
        id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        seen_at TEXT NOT NULL
    );",
    ),
    (
        4,
        "sessions and sign-ins under way",
        "CREATE TABLE IF NOT EXISTS sessions (
        id_hash TEXT PRIMARY KEY,
        subject TEXT NOT NULL,
        email TEXT,
        groups TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS sessions_expires_at ON sessions (expires_at);
    CREATE TABLE IF NOT EXISTS sign_ins (
        state TEXT PRIMARY KEY,
        verifier TEXT NOT NULL,
        nonce TEXT NOT NULL,
        next TEXT NOT NULL,
        created_at TEXT NOT NULL
    );",
    ),
    (
        5,
        "allocation history: hourly and daily holdings by key, and the minutes recorded",
        "CREATE TABLE IF NOT EXISTS cost_keys (
        id BIGINT PRIMARY KEY,
        cluster TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        lifecycle TEXT NOT NULL,
        kind TEXT NOT NULL,
        team TEXT NOT NULL,
        service TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS cost_hours (
        hour BIGINT NOT NULL,
        key_id BIGINT NOT NULL,
        instance_hours DOUBLE PRECISION NOT NULL,
        gpu_hours DOUBLE PRECISION NOT NULL,
        memory_mib_hours DOUBLE PRECISION NOT NULL,
        whole_gpu_hours DOUBLE PRECISION NOT NULL,
        usage_gpu_hours DOUBLE PRECISION NOT NULL,
        unused_gpu_hours DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (hour, key_id)
    );
    CREATE TABLE IF NOT EXISTS cost_days (
        day BIGINT NOT NULL,
        key_id BIGINT NOT NULL,
        instance_hours DOUBLE PRECISION NOT NULL,
        gpu_hours DOUBLE PRECISION NOT NULL,
        memory_mib_hours DOUBLE PRECISION NOT NULL,
        whole_gpu_hours DOUBLE PRECISION NOT NULL,
        usage_gpu_hours DOUBLE PRECISION NOT NULL,
        unused_gpu_hours DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (day, key_id)
    );
    CREATE TABLE IF NOT EXISTS cost_minutes (
        minute BIGINT PRIMARY KEY,
        replica TEXT NOT NULL
    );",
    ),
    (
        6,
        "allocation history: instances' CPU and memory, and what tasks reserve of them",
        "ALTER TABLE cost_hours ADD COLUMN cpu_hours DOUBLE PRECISION NOT NULL DEFAULT 0;
    ALTER TABLE cost_hours ADD COLUMN host_memory_mib_hours DOUBLE PRECISION NOT NULL DEFAULT 0;
    ALTER TABLE cost_days ADD COLUMN cpu_hours DOUBLE PRECISION NOT NULL DEFAULT 0;
    ALTER TABLE cost_days ADD COLUMN host_memory_mib_hours DOUBLE PRECISION NOT NULL DEFAULT 0;",
    ),
    (
        7,
        "approvals: changes past a team's budget waiting for someone to say yes",
        "CREATE TABLE IF NOT EXISTS approvals (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state TEXT NOT NULL,
        team TEXT NOT NULL,
        cluster TEXT NOT NULL,
        service TEXT NOT NULL,
        requester TEXT NOT NULL,
        delta_mib BIGINT NOT NULL,
        delta_whole_gpus BIGINT NOT NULL,
        body TEXT NOT NULL,
        decided_by TEXT,
        decided_by_email TEXT,
        decided_at TEXT,
        decision_note TEXT,
        detail TEXT,
        audit_id TEXT,
        owner TEXT
    );
    CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state);
    ALTER TABLE audit_log ADD COLUMN approved_by TEXT;
    ALTER TABLE audit_log ADD COLUMN approval_id TEXT;",
    ),
    (
        8,
        "hardening: the console's keys, the people seen, one pending request per service and change",
        "CREATE TABLE IF NOT EXISTS console_keys (
        name TEXT PRIMARY KEY,
        key TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    DROP TABLE IF EXISTS sign_ins;
    CREATE TABLE IF NOT EXISTS people (
        subject TEXT PRIMARY KEY,
        email TEXT,
        groups TEXT NOT NULL,
        auth_mode TEXT NOT NULL,
        seen_at TEXT NOT NULL
    );
    ALTER TABLE approvals ADD COLUMN change_key TEXT;
    CREATE UNIQUE INDEX IF NOT EXISTS approvals_pending_change
        ON approvals (cluster, service, change_key) WHERE state = 'pending';
    CREATE INDEX IF NOT EXISTS approvals_team ON approvals (team, cluster, state);
    CREATE INDEX IF NOT EXISTS audit_log_resource ON audit_log (resource, at);",
    ),
    (
        9,
        "cost history: the instance-hours of ECS Managed Instances, billed their charge",
        "ALTER TABLE cost_hours ADD COLUMN managed_instance_hours DOUBLE PRECISION NOT NULL DEFAULT 0;
    ALTER TABLE cost_days ADD COLUMN managed_instance_hours DOUBLE PRECISION NOT NULL DEFAULT 0;",
    ),
    (
        10,
        "the deployments ECS had before a deploy's UpdateService, to tell the one it made",
        "ALTER TABLE audit_log ADD COLUMN prior_deployments TEXT;",
    ),
    (
        11,
        "the Price List's on-demand prices, per region, type and the date each took effect",
        "CREATE TABLE IF NOT EXISTS list_prices (
        region TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        effective TEXT NOT NULL,
        usd_per_hour DOUBLE PRECISION NOT NULL,
        read_at BIGINT NOT NULL,
        PRIMARY KEY (region, instance_type, effective)
    );",
    ),
    (
        12,
        "cost history: GPU-hours by the larger of memory and compute share, and the estimated part of unused (NULL before: unknown)",
        "ALTER TABLE cost_hours ADD COLUMN max_rule_gpu_hours DOUBLE PRECISION;
    ALTER TABLE cost_days ADD COLUMN max_rule_gpu_hours DOUBLE PRECISION;
    ALTER TABLE cost_hours ADD COLUMN estimated_unused_gpu_hours DOUBLE PRECISION;
    ALTER TABLE cost_days ADD COLUMN estimated_unused_gpu_hours DOUBLE PRECISION;",
    ),
    (
        13,
        "sealed months: the prices each closed month keeps, one row per version",
        "CREATE TABLE IF NOT EXISTS cost_sealed_months (
        month TEXT NOT NULL,
        version BIGINT NOT NULL,
        sealed_at TEXT NOT NULL,
        sealed_by TEXT NOT NULL,
        reason TEXT NOT NULL,
        audit_id TEXT,
        total_cents BIGINT NOT NULL,
        recorded_hours DOUBLE PRECISION NOT NULL,
        book TEXT NOT NULL,
        PRIMARY KEY (month, version)
    );",
    ),
    (
        14,
        "the bill: minutes each instance was seen a day, Cost Explorer's amortized cost of each instance and day, and the days read",
        "CREATE TABLE IF NOT EXISTS cost_instance_days (
        day BIGINT NOT NULL,
        instance_id TEXT NOT NULL,
        cluster TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        lifecycle TEXT NOT NULL,
        minutes BIGINT NOT NULL,
        PRIMARY KEY (day, instance_id)
    );
    CREATE TABLE IF NOT EXISTS cost_explorer_lines (
        day BIGINT NOT NULL,
        resource_id TEXT NOT NULL,
        usd DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (day, resource_id)
    );
    CREATE TABLE IF NOT EXISTS cost_explorer_days (
        day BIGINT PRIMARY KEY,
        read_at BIGINT NOT NULL,
        calls BIGINT NOT NULL
    );",
    ),
];
