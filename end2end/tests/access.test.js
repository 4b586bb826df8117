// Sign-in and team ownership, in a console behind a sign-in proxy (the tests play the proxy:
// they pass X-Forwarded-User, -Email and -Groups from 127.0.0.1, which the console trusts).
// A deployer of another team sees why they cannot deploy a service; an admin deploys it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { apiAs, launch, openPageAs, waitForHydration, waitUntil } from '../support/browser.js';

const PROXY_URL = process.env.GPUSHARE_PROXY_URL;

// The people, as the proxy names them (groups from policy.example.toml).
const BO = { 'x-forwarded-user': 'bo', 'x-forwarded-email': 'bo@example.com', 'x-forwarded-groups': 'ml-engineers,vision-eng' };
const ROOT = { 'x-forwarded-user': 'root', 'x-forwarded-email': 'root@example.com', 'x-forwarded-groups': 'platform-admins' };

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const api = (path, headers, init) => apiAs(PROXY_URL, path, headers, init);
const pageAs = (headers) => openPageAs(browser, headers, { consoleErrors: false });

describe('access', { skip: !PROXY_URL && 'GPUSHARE_PROXY_URL is not set' }, () => {
  test('a deployer of another team sees why they cannot deploy; an admin can', async () => {
    // The proxied console's first snapshot.
    await waitUntil('the proxied console\'s first fleet snapshot', async () => (await fetch(PROXY_URL + '/api/v1/fleet', { headers: ROOT })).status === 200);
    const anonymous = await fetch(PROXY_URL + '/api/v1/services');
    assert.equal(anonymous.status, 401, 'no sign-in, no answer');

    // A new revision of the search team's embed-api, registered by the admin.
    const source = (await api('/api/v1/task-definitions/embed-api/1', ROOT)).body.task_definition;
    source.containerDefinitions[0].environment = [...(source.containerDefinitions[0].environment ?? []), { name: 'RELEASE', value: 'access' }];
    const registered = await api('/api/v1/task-definitions/embed-api/1/register', ROOT, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_definition: source, description: 'access e2e' }),
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));

    const bo = await pageAs(BO);
    await bo.page.goto(PROXY_URL + '/deployments/inference-prod/embed-api');
    await waitForHydration(bo.page);
    assert.match(await bo.page.getByTestId('identity').textContent(), /bo@example\.com \(deployer: vision\)/);
    const refusal = bo.page.getByTestId('deploy-not-allowed');
    await refusal.waitFor();
    assert.match(await refusal.textContent(), /belongs to team search/);
    assert.equal(await bo.page.getByTestId('deploy-send').count(), 0, 'no deploy button for another team');
    assert.deepEqual(bo.problems, []);
    await bo.context.close();

    const root = await pageAs(ROOT);
    await root.page.goto(PROXY_URL + '/deployments/inference-prod/embed-api');
    await waitForHydration(root.page);
    assert.match(await root.page.getByTestId('identity').textContent(), /root@example\.com \(admin\)/);
    await root.page.getByTestId('deploy-description').fill('an admin ships it');
    await root.page.getByTestId('deploy-send').click();
    await root.page.waitForURL(/\/rollouts\//);
    await root.page.getByTestId('watch-result').waitFor();
    assert.deepEqual(root.problems, []);
    await root.context.close();

    const log = (await api('/api/v1/audit?resource=embed-api', ROOT)).body;
    const deploy = log.find((r) => r.action === 'deploy' && r.actor === 'root');
    assert.ok(deploy, JSON.stringify(log));
    assert.equal(deploy.actor_email, 'root@example.com');
    assert.equal(deploy.actor_role, 'admin');
    assert.equal(deploy.auth_mode, 'proxy');
  });
});
