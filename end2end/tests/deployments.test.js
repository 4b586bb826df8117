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

describe('deployments', () => {
  test('a revision is deployed from the page and its rollout watched to the end', async () => {
    // A settled MPS service other than embed-api (the editor's tests use that one).
    const services = (await api('/api/v1/services')).body;
    const row = services.find((s) => s.family !== 'embed-api' && s.gpu.some((g) => g.includes('MPS'))
      && s.service.rollout_state === 'COMPLETED' && s.service.deployments === 1);
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

    // Coming back shows the same state: it lives on the server, not in this tab.
    await page.reload();
    await waitForHydration(page);
    assert.equal(await page.getByTestId('watch-result').getAttribute('data-result'), 'succeeded');

    await page.goto(BASE_URL + '/audit?action=deploy');
    const audited = page.getByTestId('audit-table').locator('tbody tr').first();
    assert.equal(await audited.getAttribute('data-outcome'), 'succeeded');
    assert.match(await audited.textContent(), new RegExp(`${cluster}/${name}`));
    assert.deepEqual(problems, []);
    await context.close();
  });
});
