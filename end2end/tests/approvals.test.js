// Team budgets with approval, in a console behind a sign-in proxy (policy.example.toml gives
// search 96 GiB on inference-prod, approved by search-leads). A deployer of search asks for a
// deploy past the budget; an approver opens the request from the header's count and approves
// it with a note, which keeps what was typed while the page reads the request again; the
// requester's page follows the request live until it is sent.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { apiAs, launch, openPageAs, waitForHydration, waitUntil } from '../support/browser.js';

const PROXY_URL = process.env.GPUSHARE_PROXY_URL;

const ANA = { 'x-forwarded-user': 'ana', 'x-forwarded-email': 'ana@example.com', 'x-forwarded-groups': 'ml-engineers,search-eng' };
const CY = { 'x-forwarded-user': 'cy', 'x-forwarded-email': 'cy@example.com', 'x-forwarded-groups': 'search-leads' };
const ROOT = { 'x-forwarded-user': 'root', 'x-forwarded-email': 'root@example.com', 'x-forwarded-groups': 'platform-admins' };

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const api = (path, headers, init) => apiAs(PROXY_URL, path, headers, init);
const pageAs = (headers) => openPageAs(browser, headers);

describe('approvals', { skip: !PROXY_URL && 'GPUSHARE_PROXY_URL is not set' }, () => {
  test('a deploy past the budget waits for an approver, who sends it as the requester\'s', async () => {
    // The proxied console's first snapshot.
    await waitUntil('the proxied console\'s first fleet snapshot', async () => (await fetch(PROXY_URL + '/api/v1/fleet', { headers: ROOT })).status === 200);
    // The service as the console sees it, once it has caught up with any deploy an earlier test
    // sent (the snapshot refreshes every 15 s).
    const deployed = (await api('/api/v1/audit?action=deploy&resource=inference-prod/embed-api', ROOT)).body;
    const latest = deployed.find((r) => r.outcome === 'in_progress' || r.outcome === 'succeeded');
    let running;
    for (let i = 0; i < 120; i += 1) {
      const services = (await api('/api/v1/services?cluster=inference-prod', ANA)).body;
      const embed = services.find((s) => s.service.name === 'embed-api');
      const caughtUp = !latest || `embed-api:${embed.revision}` === latest.to_revision;
      if (caughtUp && embed.service.rollout_state === 'COMPLETED' && embed.service.deployments === 1) {
        running = embed.revision;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.ok(running, 'embed-api settles on its revision within a minute');

    // 10 GiB a task instead of 4: 8 tasks × 6 GiB more takes search past its 96 GiB.
    const registered = await api(`/api/v1/task-definitions/embed-api/${running}/register`, ANA, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        edits: [{ container: 'embed-api', gpu: { kind: 'mps', memory_mib: 10240, max_compute_percent: 50 } }],
        description: 'approvals e2e',
      }),
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const target = registered.body.registered.revision;

    const ana = await pageAs(ANA);
    await ana.page.goto(`${PROXY_URL}/deployments/inference-prod/embed-api?revision=${target}`);
    await waitForHydration(ana.page);
    const budget = ana.page.getByTestId('rollout-budget');
    await budget.waitFor();
    assert.match(await budget.textContent(), /past the budget/);
    await ana.page.getByTestId('deploy-description').fill('longer context for the launch');
    const send = ana.page.getByTestId('deploy-send');
    assert.match(await send.textContent(), /Ask for approval/);
    await send.click();
    // The request's page, or the refusal that says why there is none.
    const refused = ana.page.getByTestId('deploy-refused');
    const first = await Promise.race([
      ana.page.waitForURL(/\/approvals\/[0-9a-f-]+$/).then(() => 'asked', () => 'no request page'),
      refused.waitFor().then(() => 'refused', () => 'no refusal'),
    ]);
    assert.equal(first, 'asked', `the deploy was refused: ${await refused.allTextContents()}`);
    const id = ana.page.url().split('/').pop();
    await ana.page.locator('[data-testid="approval-state"][data-state="pending"]').waitFor();
    assert.equal(await ana.page.getByTestId('withdraw').count(), 1, 'the requester may withdraw');
    assert.equal(await ana.page.getByTestId('approve').count(), 0, 'but not approve');

    const cy = await pageAs(CY);
    await cy.page.goto(`${PROXY_URL}/approvals`);
    await waitForHydration(cy.page);
    assert.equal((await cy.page.getByTestId('approvals-waiting').textContent()).trim(), '1');
    await cy.page.locator(`[data-testid="approval-row"][data-id="${id}"] a`).first().click();
    await cy.page.waitForURL(new RegExp(`/approvals/${id}$`));
    await cy.page.getByTestId('approval-arithmetic').waitFor();
    assert.match(await cy.page.getByTestId('approval-arithmetic').textContent(), /search holds .* this deploy adds 48 GiB/);
    assert.match(await cy.page.getByTestId('approval-note').textContent(), /longer context/);
    // The page reads the request again every 3 s while it waits. One such read lands between
    // two halves of the note, typed as keys into whatever has the focus: the note keeps both
    // halves and the focus.
    const note = cy.page.getByTestId('decision-note');
    const readAt = cy.page.getByTestId('approval-read-at');
    const firstRead = await readAt.getAttribute('data-read-at');
    await note.click();
    await cy.page.keyboard.type('ok for the ');
    await waitUntil('the request page to read the request again', async () => (await readAt.getAttribute('data-read-at')) !== firstRead, { timeout: 15_000 });
    assert.match(await readAt.textContent(), /^As of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.$/);
    await cy.page.keyboard.type('launch week');
    assert.equal(await note.inputValue(), 'ok for the launch week');
    await cy.page.getByTestId('approve').click();
    await cy.page.getByTestId('decision-result').waitFor({ timeout: 30_000 });
    assert.match(await cy.page.getByTestId('decision-result').textContent(), /approved and sent/);

    // The requester's page follows the request without a reload.
    await ana.page.locator('[data-testid="approval-state"][data-state="sent"]').waitFor({ timeout: 15_000 });
    await ana.page.getByTestId('approval-watch').click();
    await ana.page.waitForURL(/\/rollouts\//);
    await ana.page.getByTestId('watch-result').waitFor();

    const log = (await api('/api/v1/audit?resource=inference-prod/embed-api', ROOT)).body;
    const sent = log.find((r) => r.action === 'deploy' && r.approval_id === id);
    assert.ok(sent, JSON.stringify(log));
    assert.equal(sent.actor, 'ana');
    assert.equal(sent.approved_by, 'cy');
    assert.ok(log.find((r) => r.action === 'approve' && r.actor === 'cy' && r.description === 'ok for the launch week'));
    assert.ok(log.find((r) => r.action === 'request' && r.actor === 'ana'));

    assert.deepEqual(ana.problems, []);
    assert.deepEqual(cy.problems, []);
    await ana.context.close();
    await cy.context.close();
  });
});
