// Deployments: register a new revision of a service's family, open the service, see the
// pre-check, deploy from the page, and watch the rollout finish live; coming back shows the
// same state, and the audit log has the deploy.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

async function api(path, init) {
  const response = await fetch(BASE_URL + path, init);
  return { status: response.status, body: await response.json() };
}

// The clusters with an instance whose MPS daemon is impaired (the demo's batch-sim keeps one):
// a new MPS task may be placed there and fail at start, so a rollout there may never finish.
async function impairedClusters() {
  const { snapshot } = (await api('/api/v1/fleet')).body;
  return new Set(snapshot.clusters.filter((c) => c.instances.some((i) => i.impaired)).map((c) => c.name));
}

// The MPS services that run one settled deployment, on clusters where a rollout can finish.
async function settledMpsServices() {
  const impaired = await impairedClusters();
  const services = (await api('/api/v1/services')).body;
  return services.filter((s) => s.family !== 'embed-api' && s.gpu.some((g) => g.includes('MPS'))
    && s.service.rollout_state === 'COMPLETED' && s.service.deployments === 1 && !impaired.has(s.cluster));
}

describe('deployments', () => {
  test('a service is restarted from the pre-check of the revision it runs', async () => {
    const row = (await settledMpsServices()).at(-1);
    assert.ok(row, 'a settled MPS service');
    const { cluster, revision } = row;
    const name = row.service.name;
    const { context, page, problems } = await openPage(browser);
    await page.goto(`${BASE_URL}/deployments/${cluster}/${name}?revision=${revision}`);
    await waitForHydration(page);
    const form = page.getByTestId('deploy-form');
    await form.waitFor();
    assert.equal(await form.getAttribute('data-restart'), 'true');
    assert.match(await page.getByTestId('restart-explained').textContent(), /forceNewDeployment/);
    const send = page.getByTestId('deploy-send');
    assert.equal((await send.textContent()).trim(), `Restart: new tasks of ${revision}`);
    await page.getByTestId('deploy-description').fill('pick up the moved tag');
    await send.click();
    await page.waitForURL(/\/rollouts\//);
    const id = page.url().split('/rollouts/')[1];
    await page.waitForFunction(() => document.querySelector('[data-testid="watch-result"]')?.dataset.result === 'succeeded', null, { timeout: 90_000 });
    assert.match(await page.locator('h1').first().textContent(), new RegExp(`^Restart ${row.family}:${revision} to ${cluster}/${name}`));
    // The audit log has it as a restart of the same revision, with the reason.
    const audit = (await api(`/api/v1/audit?action=restart&resource=${cluster}/${name}`)).body;
    const record = audit.find((r) => r.id === id);
    assert.ok(record, JSON.stringify(audit));
    assert.equal(record.to_revision, `${row.family}:${revision}`);
    assert.equal(record.from_revision, `${row.family}:${revision}`);
    assert.equal(record.description, 'pick up the moved tag');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('a revision is deployed from the page and its rollout watched to the end', async () => {
    // A settled MPS service other than embed-api (the editor's tests use that one), on a
    // cluster where nothing is impaired.
    const row = (await settledMpsServices())[0];
    assert.ok(row, 'a settled MPS service');
    const { cluster, family, revision } = row;
    const name = row.service.name;

    // A new revision: the same, with one more variable.
    const source = (await api(`/api/v1/task-definitions/${family}/${revision}`)).body.task_definition;
    source.containerDefinitions[0].environment = [...(source.containerDefinitions[0].environment ?? []), { name: 'RELEASE', value: 'e2e' }];
    const registered = await api(`/api/v1/task-definitions/${family}/${revision}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_definition: source, description: 'release e2e' }),
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const target = registered.body.registered.revision;

    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/deployments');
    await waitForHydration(page);
    await page.locator(`a[href="/deployments/${cluster}/${name}"]`).click();
    await page.waitForURL(`${BASE_URL}/deployments/${cluster}/${name}`);
    const verdict = page.getByTestId('pre-check-verdict');
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute('data-verdict'), 'completes');
    assert.match(await page.getByTestId('json-diff').textContent(), /RELEASE/);

    await page.getByTestId('deploy-description').fill('ship the e2e release');
    await page.getByTestId('deploy-send').click();
    await page.waitForURL(/\/rollouts\//);
    const result = page.getByTestId('watch-result');
    await page.waitForFunction(() => document.querySelector('[data-testid="watch-result"]')?.dataset.result === 'succeeded', null, { timeout: 90_000 });
    assert.match(await result.textContent(), new RegExp(`runs ${family}:${target}`));
    assert.equal(await page.getByTestId('watch-progress').getAttribute('value'), '100');

    // The new tasks, each with the GPU it was placed on, linked to the heatmap.
    const gpuLinks = page.getByTestId('watch-tasks').locator('[data-testid="task-gpus"] a');
    await gpuLinks.first().waitFor();
    const uuid = await gpuLinks.first().getAttribute('title');
    assert.ok(uuid, 'the link names the GPU UUID');

    // Coming back shows the same state: it lives on the server, not in this tab.
    await page.reload();
    await waitForHydration(page);
    assert.equal(await page.getByTestId('watch-result').getAttribute('data-result'), 'succeeded');

    await page.getByTestId('watch-tasks').locator('[data-testid="task-gpus"] a').first().click();
    await page.waitForURL(/\/\?gpu=/);
    assert.equal(await page.getByTestId('gpu-uuid').textContent(), uuid);

    // The tasks the rollout replaced are among the cluster's stopped tasks, with ECS's reason.
    await page.goto(`${BASE_URL}/clusters/${cluster}/stopped-tasks?service=${name}`);
    const stoppedRows = page.getByTestId('task-table').locator('tbody tr');
    await stoppedRows.first().waitFor();
    assert.equal(await stoppedRows.first().getAttribute('data-stop-code'), 'ServiceSchedulerInitiated');

    await page.goto(BASE_URL + '/audit?action=deploy');
    const audited = page.getByTestId('audit-table').locator('tbody tr').first();
    assert.equal(await audited.getAttribute('data-outcome'), 'succeeded');
    assert.match(await audited.textContent(), new RegExp(`${cluster}/${name}`));
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('a rollout onto a cluster with an impaired MPS daemon is said to stall, naming the instance and what lets it through', async () => {
    const { snapshot } = (await api('/api/v1/fleet')).body;
    const cluster = snapshot.clusters.find((c) => c.instances.some((i) => i.impaired && !i.not_placing));
    assert.ok(cluster, 'the demo keeps an instance with an impaired MPS daemon');
    const instance = cluster.instances.find((i) => i.impaired && !i.not_placing);
    const impaired = instance.ec2_instance_id;
    assert.ok(instance.gpus.some((g) => g.remaining_memory_mib >= 1024), `${impaired} has a GPU with 1 GiB free: ${JSON.stringify(instance.gpus)}`);
    // A revision of one of that cluster's MPS services that asks for 1 GiB of GPU memory, so it
    // fits on the impaired instance whatever its tasks are doing at this moment: its GPUs fill
    // and empty as ECS places tasks there that fail at start, and the smallest room the demo's
    // tasks can leave on a GPU is 2.5 GiB.
    const services = (await api('/api/v1/services')).body;
    const row = services.find((s) => s.cluster === cluster.name && s.gpu.some((g) => g.includes('MPS')));
    assert.ok(row, `an MPS service of ${cluster.name}`);
    const source = (await api(`/api/v1/task-definitions/${row.family}/${row.revision}`)).body.task_definition;
    const mps = source.containerDefinitions
      .flatMap((c) => c.resourceRequirements ?? [])
      .find((r) => r.type === 'GPU' && r.sharingStrategy?.nvidiaMps);
    assert.ok(mps, JSON.stringify(source.containerDefinitions));
    mps.sharingStrategy.nvidiaMps.memory = 1024;
    const registered = await api(`/api/v1/task-definitions/${row.family}/${row.revision}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_definition: source, description: 'a small MPS task, to fit anywhere' }),
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const revision = registered.body.registered.revision;
    const { context, page, problems } = await openPage(browser);
    await page.goto(`${BASE_URL}/deployments/${cluster.name}/${row.service.name}?revision=${revision}`);
    const verdict = page.getByTestId('pre-check-verdict');
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute('data-verdict'), 'stalls');
    const text = await verdict.textContent();
    assert.match(text, new RegExp(`may be placed on ${impaired}, whose MPS daemon is impaired`));
    assert.match(text, /MPS control daemon is not responding on this instance/);
    assert.match(await page.getByTestId('pre-check-suggestions').textContent(), new RegExp(`Drain ${impaired}`));
    assert.match(await page.getByTestId('pre-check-unknown').textContent(), /whether ECS avoids an instance whose MPS daemon is impaired/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test("a cluster's events are merged and filtered from the page, and bad filters are explained", async () => {
    // A cluster where no service keeps failing to start tasks on an impaired instance.
    const { cluster } = (await settledMpsServices())[0];
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/deployments');
    await waitForHydration(page);
    await page.getByTestId('cluster-links').locator(`a[href="/clusters/${cluster}/events"]`).click();
    await page.waitForURL(`${BASE_URL}/clusters/${cluster}/events`);
    const rows = page.getByTestId('events-table').locator('tbody tr');
    await rows.first().waitFor();
    const shownServices = new Set(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.service)));
    assert.ok(shownServices.size > 1, 'every service of the cluster');
    const times = await rows.evaluateAll((trs) => trs.map((tr) => tr.querySelector('td').textContent));
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

    // Filter by kind and service with the form.
    await waitForHydration(page);
    // A service with a steady-state event in the window (ECS keeps a service's last 100 events,
    // so one that keeps failing to start tasks may have none left).
    const steady = await rows.evaluateAll((trs) => trs.filter((tr) => tr.dataset.kind === 'steady').map((tr) => tr.dataset.service));
    assert.ok(steady.length > 0, 'some service reached a steady state in the window');
    const service = steady[0];
    await page.getByTestId('events-kind').selectOption('steady');
    await page.getByTestId('events-service').selectOption(service);
    await page.getByTestId('events-apply').click();
    await page.waitForURL(/kind=steady/);
    await page.waitForFunction(
      (svc) => {
        const trs = [...document.querySelectorAll('[data-testid="events-table"] tbody tr')];
        return trs.length > 0 && trs.every((tr) => tr.dataset.kind === 'steady' && tr.dataset.service === svc);
      },
      service,
      { timeout: 10_000 },
    );

    // A window that is not one is explained, and what was typed stays in the form.
    await page.getByTestId('events-since').fill('forever');
    await page.getByTestId('events-apply').click();
    const error = page.getByTestId('events-error');
    await error.waitFor();
    assert.match(await error.textContent(), /30m, 6h or 2d/);
    // The server renders the form with what was typed (its value attribute), so the field holds it
    // before and after the page hydrates.
    assert.equal(await page.getByTestId('events-since').inputValue(), 'forever');
    await waitForHydration(page);
    assert.equal(await page.getByTestId('events-since').inputValue(), 'forever');
    // The form is a plain GET form: the page with the wrong filter is answered 400, as it should.
    assert.deepEqual(problems.filter((p) => !p.includes('status of 400')), []);
    await context.close();
  });
});
