// Capacity providers: the page shows each cluster's providers as the API reads them, and the
// fleet overview groups its GPUs by capacity provider, a group per provider and one for the
// instances registered by hand.
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

async function api(path) {
  const response = await fetch(BASE_URL + path);
  assert.equal(response.status, 200, path);
  return response.json();
}

describe('capacity providers', () => {
  test('the page shows each provider with what it may launch and its limits', async () => {
    const read = await api('/api/v1/capacity-providers');
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/capacity');
    await waitForHydration(page);
    const clusters = page.getByTestId('capacity-cluster');
    assert.equal(await clusters.count(), read.length);

    const managed = page.locator('[data-testid="capacity-provider"][data-provider="gpu-sharing-mi"]');
    await managed.waitFor();
    const text = await managed.textContent();
    assert.match(text, /ECS Managed Instances/);
    assert.match(text, /Auto repair\s*on: an instance whose MPS daemon is IMPAIRED is drained and replaced/);
    assert.match(text, /Scale-in delay\s*off: ECS does not retire idle instances/);
    // The types it may launch are those the API says its requirements take.
    const mi = read.find((c) => c.cluster === 'inference-prod').providers[0];
    const mayLaunch = mi.may_launch.filter((o) => o.not_matched === null && o.shares_gpus).map((o) => o.facts.name);
    assert.ok(mayLaunch.includes('g6e.12xlarge'), JSON.stringify(mayLaunch));
    const shown = await managed.getByTestId('capacity-may-launch').locator('tbody td:first-child').allTextContents();
    assert.deepEqual(shown, mayLaunch);
    // The others are folded away with the reason.
    await managed.getByTestId('capacity-not-launched').locator('summary').click();
    assert.match(await managed.getByTestId('capacity-not-launched').textContent(), /g6e\.48xlarge: 192 vCPUs is outside vCpuCount/);

    const group = page.locator('[data-testid="capacity-provider"][data-provider="batch-sim-gpu-asg"]');
    assert.match(await group.textContent(), /Group size\s*3 of at most 4 \(at least 1\)/);
    assert.match(await group.textContent(), /Managed scaling\s*on: target 90 %, steps 1 to 2, warm-up 300 s/);
    const dev = page.locator('[data-testid="capacity-cluster"][data-cluster="ml-dev"]');
    assert.match(await dev.getByTestId('capacity-none').textContent(), /registered by hand/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the fleet overview groups GPUs by capacity provider', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/?group=capacity-provider');
    await waitForHydration(page);
    const heatmap = page.getByTestId('heatmap');
    await heatmap.waitFor();
    const svg = await heatmap.innerHTML();
    assert.match(svg, /Capacity provider gpu-sharing-mi/);
    assert.match(svg, /Capacity provider batch-sim-gpu-asg/);
    assert.match(svg, /Registered by hand \(no capacity provider\)/);
    // A provider's instance says where it came from.
    assert.match(svg, /aria-label="i-[0-9a-f]+, g6\.12xlarge, 4 GPUs[^"]*, from gpu-sharing-mi/);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
