// A new GPU service from the console, on the console behind the sign-in proxy with the example
// policy: a deployer of search fills the MPS inference template on batch-sim's Auto Scaling
// group provider (search has no budget there, so none of its other changes get in the way), sees the pre-check with the instances the provider will launch and the
// requests as CLI input and CloudFormation, creates it and watches the emulator launch capacity
// until the service is steady (the emulator's record of writes holding exactly the requests the
// page previewed); the same deployer cannot create a service tagged for another team; retiring
// it frees its GPUs. Past the team's budget a new service is a request for approval that shows
// what it would create, and nothing is created while it waits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { apiAs, launch, openPageAs, waitForHydration } from '../support/browser.js';

const PROXY_URL = process.env.GPUSHARE_PROXY_URL;
const ROOT = { 'x-forwarded-user': 'root', 'x-forwarded-email': 'root@example.com', 'x-forwarded-groups': 'platform-admins' };
const ANA = { 'x-forwarded-user': 'ana', 'x-forwarded-email': 'ana@example.com', 'x-forwarded-groups': 'ml-engineers,search-eng' };

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

// The GPU memory the service's containers hold in the fleet snapshot now.
async function heldBy(service) {
  const fleet = (await apiAs(PROXY_URL, '/api/v1/fleet?cluster=batch-sim', ANA)).body;
  let mib = 0;
  for (const cluster of fleet.snapshot?.clusters ?? []) {
    for (const instance of cluster.instances ?? []) {
      for (const gpu of instance.gpus ?? []) {
        for (const container of gpu.containers ?? []) {
          if (container.service === service) mib += container.memory_mib ?? gpu.total_memory_mib;
        }
      }
    }
  }
  return mib;
}

describe('a new GPU service', { skip: !PROXY_URL && 'GPUSHARE_PROXY_URL is not set' }, () => {
  test('an admin adds a Managed Instances provider of GPUs that can be shared; a deployer cannot', async () => {
    // A refused check answers with an error status, which the browser logs: page errors count.
    const { page, problems } = await openPageAs(browser, ROOT, { consoleErrors: false });
    await page.goto(`${PROXY_URL}/capacity?cluster=batch-sim`);
    await waitForHydration(page);
    const form = page.getByTestId('new-provider-form');
    await form.locator('summary').click();
    await page.getByTestId('provider-name').fill('fargate-l40s');
    await page.getByTestId('provider-accelerators').fill('l40s');
    await page.getByTestId('provider-allowed').fill('g6e.*, g6f.*');
    await page.getByTestId('provider-subnets').fill('subnet-0a1b2c3d4e5f60001');
    await page.getByTestId('provider-groups').fill('sg-0a1b2c3d4e5f60001');
    await page.getByTestId('provider-role').fill('arn:aws:iam::123456789012:role/ecsInfrastructureRole');
    await page.getByTestId('provider-profile').fill('arn:aws:iam::123456789012:instance-profile/ecsInstanceRole');
    await page.getByTestId('provider-check').click();
    const refused = page.getByTestId('provider-refused');
    await refused.waitFor();
    assert.match(await refused.textContent(), /name: ECS refuses a capacity provider name that begins with "fargate"/);
    await page.getByTestId('provider-name').fill('e2e-l40s');
    await page.getByTestId('provider-check').click();
    const sharing = page.getByTestId('provider-sharing');
    await sharing.waitFor();
    const types = await sharing.locator('tbody tr td:first-child').allTextContents();
    assert.ok(types.length > 0 && types.every((t) => t.startsWith('g6e.')), types.join(', '));
    assert.match(await page.getByTestId('provider-after').textContent(), /e2e-l40s/);
    assert.match(await page.getByTestId('provider-cli').textContent(), /^aws ecs create-capacity-provider --cli-input-json '/);
    await page.getByTestId('provider-create').click();
    const created = page.getByTestId('provider-created');
    await created.waitFor();
    assert.match(await created.textContent(), /Created e2e-l40s/);
    const capacity = (await apiAs(PROXY_URL, '/api/v1/capacity-providers?cluster=batch-sim', ROOT)).body;
    assert.ok(capacity[0].providers.some((p) => p.name === 'e2e-l40s' && p.type === 'MANAGED_INSTANCES'));
    const asDeployer = await apiAs(PROXY_URL, '/api/v1/clusters/batch-sim/capacity-providers/check', { ...ANA, 'content-type': 'application/json' }, {
      method: 'POST', body: JSON.stringify({ name: 'mine' }),
    });
    assert.equal(asDeployer.status, 403);
    assert.match(asDeployer.body.error.message, /admin role/);
    assert.deepEqual(problems, []);
  });

  test('a deployer creates an MPS service from the template, watches capacity launch, and retires it', async () => {
    const name = `embed-e2e-${Date.now() % 100000}`;
    const { page, problems } = await openPageAs(browser, ANA, { consoleErrors: false });
    await page.goto(`${PROXY_URL}/deployments/new?cluster=batch-sim`);
    await waitForHydration(page);
    // Providers that can share GPUs are offered, a Managed Instances one first.
    const select = page.getByTestId('new-provider-select');
    await select.waitFor();
    assert.equal(await select.inputValue(), 'e2e-l40s', 'the Managed Instances provider comes first');
    assert.deepEqual(await select.locator('option').evaluateAll((o) => o.map((x) => x.value).sort()), ['batch-sim-gpu-asg', 'e2e-l40s']);

    await page.getByTestId('new-image').fill('123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:2.0');
    // 44 GiB of an L40S's 48: the provider has no instance yet, so it launches for both tasks.
    await page.getByTestId('new-gpu-memory').fill('45056');
    await page.getByTestId('new-name').fill(name);
    await page.getByTestId('new-desired').fill('2');
    await page.getByTestId('new-subnets').fill('subnet-0a1b2c3d4e5f60001');
    await page.getByTestId('new-groups').fill('sg-0a1b2c3d4e5f60001');

    // Another team's tag is refused at the check, before anything is created.
    await page.getByTestId('new-team').fill('vision');
    await page.getByTestId('new-check').click();
    const refused = page.getByTestId('new-refused');
    await refused.waitFor();
    assert.match(await refused.textContent(), /team tag says vision/);
    assert.equal(await page.getByTestId('new-send').count(), 0);
    const forged = await apiAs(PROXY_URL, '/api/v1/clusters/batch-sim/services', { ...ANA, 'content-type': 'application/json' }, {
      method: 'POST',
      body: JSON.stringify({ serviceName: `${name}-x`, taskDefinition: 'embed-api:1', desiredCount: 1, launchType: 'EC2', tags: [{ key: 'team', value: 'vision' }] }),
    });
    assert.equal(forged.status, 403, JSON.stringify(forged.body));

    // Her own team (the field left empty: the console sets it) passes.
    await page.getByTestId('new-team').fill('');
    await page.getByTestId('new-check').click();
    const checked = page.getByTestId('new-checked');
    await checked.waitFor();
    assert.match(await checked.textContent(), new RegExp(`${name} on batch-sim, for team search`));
    assert.match(await page.getByTestId('new-added').textContent(), /team tag search/);
    const growth = page.getByTestId('pre-check-growth');
    await growth.waitFor();
    assert.ok(Number(await growth.getAttribute('data-instances')) > 0, await growth.textContent());
    assert.match(await growth.textContent(), /e2e-l40s launches \d+ × g6e\./);
    assert.equal(await page.getByTestId('pre-check-verdict').getAttribute('data-verdict'), 'completes');
    const cli = await page.getByTestId('new-cli').textContent();
    assert.match(cli, /^aws ecs register-task-definition --cli-input-json '/);
    const createJson = JSON.parse(cli.split("create-service --cli-input-json '")[1].split("'\n")[0]);
    assert.equal(createJson.serviceName, name);
    assert.deepEqual(createJson.tags, [{ key: 'team', value: 'search' }]);
    assert.deepEqual(createJson.capacityProviderStrategy, [{ capacityProvider: 'e2e-l40s', weight: 1, base: 0 }]);
    assert.match(await page.getByTestId('new-cloudformation').textContent(), /Type: AWS::ECS::Service/);

    // Created: the page follows the first deployment while the provider launches capacity.
    await page.getByTestId('new-send').click();
    await page.waitForURL(/\/rollouts\//);
    const result = page.getByTestId('watch-result');
    await result.waitFor();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="watch-result"]')?.dataset.result !== 'in_progress',
      null,
      { timeout: 150_000 },
    );
    assert.equal(await result.getAttribute('data-result'), 'succeeded', await result.textContent());
    const audit = (await apiAs(PROXY_URL, `/api/v1/audit?action=create`, ANA)).body;
    const record = audit.find((r) => r.resource === `batch-sim/${name}`);
    assert.ok(record, JSON.stringify(audit));
    assert.equal(record.actor, 'ana');
    assert.match(record.to_revision, new RegExp(`^${name}:1 × 2$`));

    // The emulator received exactly the requests the page previewed as CLI input: the service
    // with the revision just registered, and the task definition with the console's audit tag.
    const status = (await apiAs(PROXY_URL, '/api/console_status', ANA, { method: 'POST' })).body;
    const writes = await (await fetch(`${status.fleet_source.endpoint}/_emulator/writes`)).json();
    const created = writes.filter((w) => w.operation === 'CreateService' && w.request.serviceName === name);
    assert.equal(created.length, 1, JSON.stringify(created));
    assert.equal(created[0].error, null);
    const revision = record.to_revision.split(' × ')[0];
    assert.deepEqual(created[0].request, { ...createJson, taskDefinition: revision });
    const registerJson = JSON.parse(cli.split("register-task-definition --cli-input-json '")[1].split("'\n")[0]);
    const registered = writes.filter((w) => w.operation === 'RegisterTaskDefinition' && w.request.family === registerJson.family);
    assert.equal(registered.length, 1, JSON.stringify(registered));
    const { tags: sentTags, ...sent } = registered[0].request;
    const { tags: shownTags, ...shown } = registerJson;
    assert.deepEqual(sent, shown);
    assert.deepEqual(sentTags.filter((t) => t.key !== 'gpushare:audit-id'), shownTags);
    assert.ok(sentTags.some((t) => t.key === 'gpushare:audit-id'), JSON.stringify(sentTags));

    // Retired from its page: the blast radius first, the name typed, and its GPUs freed.
    // The snapshot catches up with ECS within a refresh or two.
    let held = 0;
    for (let i = 0; i < 60 && held !== 2 * 45056; i += 1) {
      held = await heldBy(name);
      if (held !== 2 * 45056) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    assert.equal(held, 2 * 45056, 'the snapshot shows its two tasks');
    await page.goto(`${PROXY_URL}/deployments/batch-sim/${name}`);
    await waitForHydration(page);
    await page.getByTestId('retire-show').click();
    const memory = page.getByTestId('retire-memory');
    await memory.waitFor();
    assert.match(await memory.textContent(), /on 2 GPUs/);
    const send = page.getByTestId('retire-send');
    assert.ok(await send.isDisabled(), 'not before the name is typed');
    await page.getByTestId('retire-confirm').fill(name);
    await page.getByTestId('retire-description').fill('end of the e2e run');
    await send.click();
    const done = page.getByTestId('retire-done');
    await done.waitFor();
    assert.match(await done.textContent(), /scaled to 0 and deleted/);
    for (let i = 0; i < 60 && held > 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      held = await heldBy(name);
    }
    assert.equal(held, 0, 'its GPUs are free');
    assert.deepEqual(problems, []);
  });

  test('past the team\'s budget a new service waits for approval, showing what it would create', async () => {
    // 20 tasks of embed-api:1 (4 GiB each) take search far past its 96 GiB on inference-prod.
    const name = `embed-wide-${Date.now() % 100000}`;
    const asked = await apiAs(PROXY_URL, '/api/v1/clusters/inference-prod/services?force=true&description=a%20wide%20canary', { ...ANA, 'content-type': 'application/json' }, {
      method: 'POST',
      body: JSON.stringify({ serviceName: name, taskDefinition: 'embed-api:1', desiredCount: 20, launchType: 'EC2' }),
    });
    assert.equal(asked.status, 202, JSON.stringify(asked.body));
    assert.ok(asked.body.approval, JSON.stringify(asked.body));
    const status = (await apiAs(PROXY_URL, '/api/console_status', ANA, { method: 'POST' })).body;
    const writes = await (await fetch(`${status.fleet_source.endpoint}/_emulator/writes`)).json();
    assert.equal(writes.filter((w) => w.operation === 'CreateService' && w.request.serviceName === name).length, 0, 'nothing is created before an approval');

    const { page, problems } = await openPageAs(browser, ANA);
    await page.goto(`${PROXY_URL}/approvals/${asked.body.approval}`);
    await waitForHydration(page);
    assert.match(await page.locator('h1').textContent(), new RegExp(`^Create inference-prod/${name} \\(embed-api:1 × 20\\)$`));
    assert.match(await page.getByTestId('approval-creation').textContent(), /a new service: 20 tasks of embed-api:1/);
    assert.match(await page.getByTestId('approval-arithmetic').textContent(), /this new service adds 80 GiB/);
    await page.locator('[data-testid="approval-state"][data-state="pending"]').waitFor();
    // Its requester takes it back: nothing was, or will be, created.
    await page.getByTestId('withdraw').click();
    await page.locator('[data-testid="approval-state"][data-state="withdrawn"]').waitFor({ timeout: 15_000 });
    assert.deepEqual(problems, []);
  });
});
