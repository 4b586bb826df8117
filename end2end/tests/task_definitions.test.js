// The task definition editor: open a family that uses a whole GPU, switch its container to MPS
// 8 GiB / 50 %, see the change and the fit check, register, and see the new revision.
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

describe('task definitions', () => {
  test('a container moves from a whole GPU to MPS 8 GiB / 50 % in a new revision', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/task-definitions');
    await waitForHydration(page);
    const row = page.getByTestId('family-table').locator('tbody tr').filter({ hasText: '1 whole GPU' }).first();
    const family = (await row.locator('th a').textContent()).trim();
    const latest = Number(await row.locator('td').first().textContent());
    await row.locator('th a').click();
    await page.waitForURL(`${BASE_URL}/task-definitions/${family}`);
    const editor = page.getByTestId('gpu-editor');
    await editor.waitFor();

    // The GPU container's row: the one whose select says whole GPUs.
    const rows = editor.locator('fieldset.edit-row');
    let container;
    for (const fieldset of await rows.all()) {
      if ((await fieldset.locator('select').inputValue()) === 'whole') {
        container = (await fieldset.locator('legend').textContent()).trim();
        break;
      }
    }
    assert.ok(container, 'a container with a whole GPU');
    await page.getByTestId(`edit-kind-${container}`).selectOption('mps');

    // Bad input first: the error sits next to the field and nothing is lost.
    await page.getByTestId(`edit-memory-${container}`).fill('8 GiB');
    await page.getByTestId('edit-check').click();
    const fieldError = page.getByTestId(`edit-row-${container}`).locator('.field-error');
    await fieldError.waitFor();
    assert.match(await fieldError.textContent(), /whole number of MiB/);
    assert.equal(await page.getByTestId(`edit-memory-${container}`).inputValue(), '8 GiB');

    await page.getByTestId(`edit-memory-${container}`).fill('8192');
    await page.getByTestId(`edit-compute-${container}`).fill('50');
    await page.getByTestId('edit-description').fill('Share the GPU: 8 GiB is enough');
    await page.getByTestId('edit-check').click();
    const changes = page.getByTestId('edit-changes');
    await changes.waitFor();
    assert.match(await changes.textContent(), /1 whole GPU.*MPS 8192 MiB \(8\.0 GiB\), compute limit 50 %/s);
    assert.match(await page.getByTestId('edit-fit-summary').textContent(), /One task could be placed now on \d+ instances/);

    await page.getByTestId('edit-register').click();
    const registered = page.getByTestId('edit-registered');
    await registered.waitFor();
    assert.match(await registered.textContent(), new RegExp(`Registered revision ${latest + 1}`));
    const newest = page.getByTestId('revision').first();
    await page.waitForFunction((n) => document.querySelector('[data-testid="revision"]')?.dataset.revision === String(n), latest + 1);
    assert.match(await newest.textContent(), /MPS 8192 MiB/);
    assert.match(await newest.textContent(), /Share the GPU: 8 GiB is enough/);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
