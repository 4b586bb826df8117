// The task definition editor: open a family that uses a whole GPU, switch its container to MPS
// 8 GiB / 50 %, see the change, the JSON diff, the fit check and the exports, register, see the
// new revision and compare it with the previous one. Then the whole-JSON mode: errors at their
// line and column, and an ECS refusal that keeps the edit.
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
    // Each capacity provider of the checked clusters says what it would launch for a task that
    // no instance has room for, or why it would not: as many as the API lists.
    const fitIn = (await page.getByTestId('edit-fit').locator('h3').first().textContent()).replace(/^Fit in /, '');
    const capacity = await (await fetch(BASE_URL + '/api/v1/capacity-providers')).json();
    const providers = capacity
      .filter((c) => fitIn === 'the whole fleet' || c.cluster === fitIn)
      .flatMap((c) => c.providers.filter((p) => p.type === 'MANAGED_INSTANCES' || p.type === 'EC2_AUTOSCALING'));
    const launches = page.getByTestId('edit-fit-growth').locator('li');
    assert.equal(await launches.count(), providers.length, `${fitIn}: ${JSON.stringify(providers.map((p) => p.name))}`);
    for (const launch of await launches.all()) {
      assert.match(await launch.textContent(), /would launch (a [a-z0-9]+\.[a-z0-9]+ \(\d+ GPUs? of \d+ MiB\), up in about \d+ min|nothing: )/);
    }
    // The JSON diff puts the GPU requirement first; the exports carry the new requirement.
    const firstDiff = page.getByTestId('json-diff').locator('tbody tr').first();
    assert.match(await firstDiff.textContent(), /resourceRequirements.*GPU/s);
    assert.match(await page.getByTestId('export-json').textContent(), /"memory": 8192/);
    assert.match(await page.getByTestId('export-cloudformation').textContent(), /NvidiaMps:\s+Memory: 8192\s+MaxComputePercent: 50/);

    await page.getByTestId('edit-register').click();
    const registered = page.getByTestId('edit-registered');
    await registered.waitFor();
    assert.match(await registered.textContent(), new RegExp(`Registered revision ${latest + 1}`));
    const newest = page.getByTestId('revision').first();
    await page.waitForFunction((n) => document.querySelector('[data-testid="revision"]')?.dataset.revision === String(n), latest + 1);
    assert.match(await newest.textContent(), /MPS 8192 MiB/);
    assert.match(await newest.textContent(), /Share the GPU: 8 GiB is enough/);

    // The comparison with the previous revision shows the GPU change first.
    await newest.getByRole('link', { name: 'Compare with the previous revision' }).click();
    await page.waitForURL(new RegExp(`/task-definitions/${family}/compare\\?from=${latest}&to=${latest + 1}`));
    await page.getByTestId('comparison').waitFor();
    assert.match(await page.getByTestId('gpu-changes').textContent(), /1 whole GPU.*MPS 8192 MiB/s);
    assert.match(await page.getByTestId('json-diff').locator('tbody tr').first().textContent(), /nvidiaMps|value/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the whole JSON: errors at their line and column, and an ECS refusal keeps the edit', async () => {
    const { context, page, problems } = await openPage(browser);
    const status = await (await fetch(BASE_URL + '/api/console_status', { method: 'POST' })).json();
    const emulator = status.fleet_source.endpoint;
    assert.ok(emulator, 'the console runs on its embedded emulator');
    const setFaults = (operations) => fetch(emulator + '/_emulator/faults', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ default: {}, operations }),
    });

    await page.goto(BASE_URL + '/task-definitions/embed-api');
    await waitForHydration(page);
    await page.getByTestId('mode-json').click();
    const area = page.getByTestId('edit-json');
    await area.waitFor();
    const source = await area.inputValue();
    assert.match(source, /"family": "embed-api"/);
    assert.match(source, /"maxComputePercent": 50/);

    // An unknown field: refused at its line and column, and the text stays.
    const unknown = source.replace('"containerDefinitions": [\n    {', '"containerDefinitions": [\n    {\n      "gpuCount": 1,');
    assert.notEqual(unknown, source);
    await area.fill(unknown);
    await page.getByTestId('edit-check').click();
    const errors = page.getByTestId('edit-errors');
    await errors.waitFor();
    assert.match(await errors.textContent(), /line \d+, column \d+: .*gpuCount/);
    assert.equal(await area.inputValue(), unknown);

    // A valid edit: the diff and the exports.
    const edited = source.replace('"maxComputePercent": 50', '"maxComputePercent": 25');
    await area.fill(edited);
    await page.getByTestId('edit-check').click();
    await page.getByTestId('json-diff').waitFor();
    assert.match(await page.getByTestId('json-diff').locator('tbody tr').first().textContent(), /maxComputePercent.*50.*25/s);
    assert.match(await page.getByTestId('export-json').textContent(), /"maxComputePercent": 25/);

    // ECS refuses (a client error: nothing was registered): its code and message show, and the
    // edit is still there.
    await setFaults({ RegisterTaskDefinition: { throttle_rate: 1 } });
    try {
      await page.getByTestId('edit-description').fill('Cap compute at 25 %');
      await page.getByTestId('edit-register').click();
      const refusal = page.getByTestId('edit-ecs-error');
      await refusal.waitFor();
      assert.match(await refusal.textContent(), /ECS is throttling requests \(RegisterTaskDefinition: ThrottlingException: Rate exceeded\)/);
      assert.equal(await area.inputValue(), edited);
    } finally {
      await setFaults({});
    }
    await page.getByTestId('edit-register').click();
    await page.getByTestId('edit-registered').waitFor();
    const newest = page.getByTestId('revision').first();
    await page.waitForFunction(() => document.querySelector('[data-testid="revision"] [data-testid="revision-change"]')?.textContent === 'Cap compute at 25 %');
    assert.match(await newest.textContent(), /compute limit 25 %/);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
