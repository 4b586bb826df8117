// The fleet heatmap: the overview with one cell per GPU, zoom and selection by click and
// keyboard, grouping, sort and zoom in the URL, tooltips, filters, live updates, bad query
// parameters, and the same page with JavaScript off. The expected numbers come from the
// server's own JSON API, never from constants.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';
import { pause, untilOneSnapshot, waitAWhile } from '../support/snapshot.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

// The GPUs the API reports for a query string, as `<EC2 instance ID>:<index>` → GPU, and the
// time of the snapshot they come from.
async function apiFleet(query = '') {
  const response = await fetch(`${BASE_URL}/api/v1/fleet${query}`);
  assert.equal(response.status, 200, await response.clone().text());
  const body = await response.json();
  const gpus = new Map();
  for (const cluster of body.snapshot.clusters) {
    for (const instance of cluster.instances) {
      for (const gpu of instance.gpus) gpus.set(`${instance.ec2_instance_id}:${gpu.index}`, gpu);
    }
  }
  return { takenAt: body.snapshot.taken_at, gpus };
}

async function apiGpus(query = '') {
  return (await apiFleet(query)).gpus;
}

const cells = (page) => page.locator('[data-testid="heatmap"] svg rect');

// What the page shows, read at once: the heatmap's cells (with their boxes) and the snapshot it
// was drawn from, and the summary's GPU count and its snapshot.
const shownNow = (page) =>
  page.evaluate(() => {
    const svg = document.querySelector('[data-testid="heatmap"] svg');
    const rects = svg ? [...svg.querySelectorAll('rect')] : [];
    const summary = document.querySelector('[data-testid="gpu-count"]')?.textContent;
    return {
      takenAt: svg?.dataset.takenAt ?? null,
      packed: svg?.classList.contains('packed') ?? false,
      cells: rects.length,
      boxes: rects.map((r) => {
        const b = r.getBoundingClientRect();
        return { bottom: b.bottom, right: b.right, width: b.width };
      }),
      summary: summary === undefined ? null : Number(summary.replaceAll(',', '')),
      summaryAt: document.querySelector('[data-testid="freshness"]')?.dataset.takenAt ?? null,
    };
  });

// Waits until the heatmap shows, from the snapshot the API answers from, the GPUs `expected`
// counts in that answer (all of them unless told), and with `summary` until the summary counts
// the same from that snapshot too (`untilOneSnapshot`: the heatmap and the summary name their
// snapshot). A hydrated page follows live updates by itself; one without JavaScript is loaded
// again (`reload`), and compared with the API's answer just before its load too. Fails after 20 s
// with what it saw last.
async function shownAsApi(page, { query = '', expected = (gpus) => gpus.size, summary = false, reload = false } = {}) {
  return untilOneSnapshot({
    readPage: () => shownNow(page),
    readApi: () => apiFleet(query),
    pageAt: (shown) => shown.takenAt,
    apiAt: (api) => api.takenAt,
    matches: (shown, api) => {
      const want = expected(api.gpus);
      const same = shown.cells === want && (!summary || (shown.summaryAt === api.takenAt && shown.summary === want));
      return same ? { shown, gpus: api.gpus } : null;
    },
    between: reload
      ? async () => {
        const before = await apiFleet(query);
        await page.reload();
        return before;
      }
      : waitAWhile,
    describe: (shown, before, after) => {
      const api = [before, after].find((a) => a?.takenAt === shown.takenAt) ?? after;
      return `the page never showed the API's ${expected(api.gpus)} GPUs (${query || 'the whole fleet'}, the snapshot of ${api.takenAt}) in 20 s: `
        + `the heatmap had ${shown.cells} cells from the snapshot of ${shown.takenAt}`
        + (summary ? `, the summary ${shown.summary} GPUs from that of ${shown.summaryAt}` : '');
    },
  });
}

// Waits until the heatmap and the summary are of one snapshot, and returns what they show (for a
// part the API has no query for, such as a group).
async function shownWithSummary(page) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const shown = await shownNow(page);
    if (shown.takenAt && shown.takenAt === shown.summaryAt) return shown;
    if (Date.now() > deadline) {
      assert.fail(`the heatmap (the snapshot of ${shown.takenAt}) and the summary (of ${shown.summaryAt}) never showed one snapshot in 20 s`);
    }
    await pause(250);
  }
}
// Waits until the GPU panel of `key` and the API's answer are of one snapshot (the panel names its
// own, `data-taken-at`, and a hydrated page reads it again on every live update), and returns what
// the panel shows with that answer's GPU. Fails after 20 s with what it saw last.
async function panelAsApi(page, key) {
  return untilOneSnapshot({
    readPage: () => page.evaluate(() => {
      const panel = document.querySelector('[data-testid="gpu-panel"]');
      return {
        takenAt: panel?.dataset.takenAt ?? null,
        uuid: panel?.querySelector('[data-testid="gpu-uuid"]')?.textContent ?? null,
        rows: panel?.querySelectorAll('[data-testid="gpu-containers"] tbody tr').length ?? 0,
        blastRadius: panel?.querySelector('[data-testid="blast-radius"]')?.textContent ?? '',
      };
    }),
    readApi: () => apiFleet(),
    pageAt: (shown) => shown.takenAt,
    apiAt: (api) => api.takenAt,
    matches: (shown, api) => (api.gpus.has(key) ? { shown, gpu: api.gpus.get(key) } : null),
    between: waitAWhile,
    describe: (shown, before, after) =>
      `the panel of GPU ${key} (from the snapshot of ${shown.takenAt}, ${shown.rows} containers) `
      + `and the API (the snapshot of ${after.takenAt}, GPU ${after.gpus.has(key) ? 'present' : 'absent'}) never showed one snapshot in 20 s`,
  });
}

const blocks = (page) =>
  page.locator('[data-testid="heatmap"] svg.packed a[data-i]').evaluateAll((as) => as.map((a) => a.dataset.i));

describe('fleet heatmap, hydrated', () => {
  test('shows one cell per GPU of the fleet, and the summary counts the same', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const { shown, gpus } = await shownAsApi(page, { summary: true });
    assert.ok(gpus.size > 0);
    assert.equal(shown.cells, gpus.size);
    assert.equal(shown.summary, gpus.size);
    assert.match(await page.getByTestId('freshness').textContent(), /^Updated \d+ s ago/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('clicking a shared GPU opens its panel with its containers and puts it in the URL', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const gpus = await apiGpus();
    const [key, gpu] = [...gpus].find(([, g]) => g.mode === 'NVIDIA_MPS' && g.containers.length > 1);
    const [instance, index] = key.split(':');
    // In the overview, a GPU opens its instance's rows with the GPU selected.
    await page.locator(`[data-i="${instance}"] rect[data-x="${index}"]`).click();
    await page.waitForURL((url) => url.searchParams.get('gpu') === key);
    assert.equal(new URL(page.url()).searchParams.get('zoom'), `instance:${instance}`);
    await page.waitForSelector(`[data-testid="heatmap"] svg:not(.packed) g[data-i="${instance}"]`);
    await page.getByTestId('gpu-panel').waitFor();
    // The panel as the API answered from the snapshot it names: its tenants can change between
    // two reads.
    const { shown, gpu: now } = await panelAsApi(page, key);
    assert.equal(shown.uuid, gpu.uuid);
    assert.equal(shown.rows, now.containers.length);
    const services = [...new Set(now.containers.map((c) => c.service))].sort().join(', ');
    assert.match(shown.blastRadius, new RegExp(services));
    // Unused is the GPU's measured figure, and an MPS GPU's panel says why tenants get only an
    // estimate of it.
    const used = now.usage?.memory_used_mib;
    assert.match(await page.getByTestId('gpu-unused').textContent(), used ? /^\d+ % of the \d+ MiB allocated/ : /^no usage data$/);
    assert.match(await page.getByTestId('instance-unused').textContent(), /% of its GPUs' allocations|^no usage data$/);
    assert.match(await page.getByTestId('unused-estimate').textContent(), /CloudWatch's GPU metrics are per GPU/);
    assert.equal(await page.locator('rect.sel').count(), 1, 'the selected cell is marked');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the keyboard moves between instances and opens one, then between GPUs and selects one', async () => {
    const { context, page } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const keys = [...(await apiGpus()).keys()];
    const order = await blocks(page);
    await page.getByTestId('heatmap').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    // The second block in the page's order opens.
    await page.waitForURL((url) => url.searchParams.get('zoom') === `instance:${order[1]}`);
    await page.waitForSelector(`[data-testid="heatmap"] svg:not(.packed) g[data-i="${order[1]}"]`);
    await page.getByTestId('heatmap').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.searchParams.has('gpu'));
    const chosen = new URL(page.url()).searchParams.get('gpu');
    const indices = await cells(page).evaluateAll((rs) => rs.map((r) => r.dataset.x));
    assert.equal(chosen, `${order[1]}:${indices[Math.min(1, indices.length - 1)]}`);
    assert.ok(keys.includes(chosen));
    await page.getByTestId('gpu-panel').waitFor();
    // Back returns to the overview.
    await page.goBack();
    await page.waitForSelector('[data-testid="heatmap"] svg.packed');
    await context.close();
  });

  test('the overview fits the fleet on the screen, a cell per GPU', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const { shown, gpus } = await shownAsApi(page);
    const total = gpus.size;
    const { boxes } = shown;
    assert.equal(boxes.length, total);
    assert.equal(boxes.filter((b) => b.bottom <= 900 && b.right <= 1440).length, total, 'every GPU without scrolling');
    assert.ok(Math.min(...boxes.map((b) => b.width)) >= 4, 'cells no smaller than 4 px');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('brushing a range of instances opens them and narrows the summary to them', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const order = await blocks(page);
    const range = order.slice(0, 4);
    const block = (id) => page.locator(`[data-testid="heatmap"] a[data-i="${id}"] rect`).first();
    await block(range[0]).click({ modifiers: ['Shift'] });
    await block(range[3]).click({ modifiers: ['Shift'] });
    await page.waitForURL((url) => url.searchParams.get('zoom') === `instances:${range.join(',')}`);
    await page.waitForSelector('[data-testid="heatmap"] svg:not(.packed)');
    // The range's GPUs, in the heatmap and the summary.
    const inRange = (gpus) => [...gpus.keys()].filter((k) => range.includes(k.split(':')[0])).length;
    const { shown } = await shownAsApi(page, { expected: inRange, summary: true });
    assert.ok(shown.cells > 0 && !shown.packed);
    assert.match(await page.getByTestId('zoom-trail').textContent(), /4 selected instances/);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('grouping, sort and zoom go into the URL and a link opens the same view', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    await page.getByTestId('filter-group').selectOption('team');
    await page.waitForURL((url) => url.searchParams.get('group') === 'team');
    await page.waitForSelector('[data-testid="heatmap"] svg.packed a.gh[data-z^="team:"]');
    await page.getByTestId('filter-sort').selectOption('free');
    await page.waitForURL((url) => url.searchParams.get('sort') === 'free');
    // Grouped and sorted, every GPU of the fleet still has its cell.
    const total = (await shownAsApi(page)).shown.cells;
    // A group's header opens it.
    const header = page.locator('[data-testid="heatmap"] a.gh').first();
    const zoom = await header.getAttribute('data-z');
    await header.click();
    await page.waitForURL((url) => url.searchParams.get('zoom') === zoom);
    await page.waitForSelector('[data-testid="heatmap"] svg:not(.packed)');
    const zoomed = await shownWithSummary(page);
    assert.ok(zoomed.cells > 0 && zoomed.cells < total, `${zoomed.cells} of ${total}`);
    assert.equal(zoomed.summary, zoomed.cells, 'the summary is of the part shown');
    // The same URL, loaded afresh, is the same view: the same grouping, sort and part. (Its GPUs
    // are counted again: the team's tasks move between instances as the fleet changes.)
    const trail = await page.getByTestId('zoom-trail').textContent();
    await page.goto(page.url());
    await waitForHydration(page);
    assert.equal(await page.getByTestId('filter-group').inputValue(), 'team');
    assert.equal(await page.getByTestId('filter-sort').inputValue(), 'free');
    assert.equal(new URL(page.url()).searchParams.get('zoom'), zoom);
    assert.equal(await page.getByTestId('zoom-trail').textContent(), trail);
    assert.match(trail, /Whole fleet/);
    const again = await shownWithSummary(page);
    assert.ok(again.cells > 0 && !again.packed);
    assert.equal(again.summary, again.cells, 'the summary is of the part shown');
    await page.getByTestId('zoom-out').click();
    await page.waitForURL((url) => !url.searchParams.has('zoom') && url.searchParams.get('group') === 'team');
    await page.waitForSelector('[data-testid="heatmap"] svg.packed');
    await shownAsApi(page, { summary: true });
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('hovering a GPU shows a tooltip with its essentials', async () => {
    const { context, page } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const cell = cells(page).first();
    await cell.hover();
    const tip = page.getByTestId('tooltip');
    await tip.waitFor({ state: 'visible' });
    assert.match(await tip.textContent(), /GPU 0.*Memory \d+ of \d+ MiB allocated/s);
    await page.mouse.move(0, 0);
    await tip.waitFor({ state: 'hidden' });
    await context.close();
  });

  test('a filter changes the URL and the cells', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    await page.getByTestId('filter-cluster').selectOption('ml-dev');
    await page.waitForURL((url) => url.searchParams.get('cluster') === 'ml-dev');
    const expected = (await shownAsApi(page, { query: '?cluster=ml-dev' })).shown.cells;
    assert.ok(expected < (await apiGpus()).size);
    await page.getByTestId('filter-mode').selectOption('IDLE');
    await page.waitForURL((url) => url.searchParams.get('mode') === 'IDLE' && url.searchParams.get('cluster') === 'ml-dev');
    await shownAsApi(page, { query: '?cluster=ml-dev&mode=IDLE' });
    await page.getByTestId('filter-colour').selectOption('compute');
    await page.waitForURL((url) => url.searchParams.get('colour') === 'compute');
    await page.waitForSelector('[data-testid="heatmap"] svg[data-colour="compute"]');
    // A link with the view opens the same view.
    await page.goto(page.url());
    await waitForHydration(page);
    await shownAsApi(page, { query: '?cluster=ml-dev&mode=IDLE' });
    assert.equal(await page.getByTestId('filter-cluster').inputValue(), 'ml-dev');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the page refetches by itself when the server has a newer snapshot', async () => {
    const { context, page } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const freshness = page.getByTestId('freshness');
    const first = Number(await freshness.getAttribute('data-version'));
    // No user action: the server's next snapshot arrives over server-sent events, and the page
    // shows it — a newer snapshot's version, and its age counted from its own time.
    await page.waitForFunction(
      (seen) => Number(document.querySelector('[data-testid="freshness"]')?.dataset.version) > seen,
      first,
      { timeout: 20_000 },
    );
    assert.match(await freshness.textContent(), /^Updated \d+ s ago · refreshes every 3 s$/);
    await context.close();
  });

  test('bad query parameters give a corrected view that says what was wrong', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/?cluster=nope&mode=SHARED&colour=rainbow');
    await waitForHydration(page);
    const notes = (await page.locator('[data-testid$="-note"]').allTextContents()).join(' ');
    assert.match(notes, /no cluster "nope"; they are: batch-sim, inference-prod, ml-dev/);
    assert.match(notes, /Sharing mode "SHARED" does not exist/);
    assert.match(notes, /Colour mode "rainbow" does not exist/);
    // The whole fleet instead.
    await shownAsApi(page);
    assert.deepEqual(problems, []);
    await context.close();
  });
});

describe('fleet heatmap, JavaScript off', () => {
  test('the server renders the same overview, and its groups and blocks are links', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(BASE_URL + '/');
    await shownAsApi(page, { reload: true, summary: true });
    assert.equal(await page.locator('[data-testid="heatmap"] svg.packed').count(), 1);
    const header = page.locator('[data-testid="heatmap"] a.gh[data-z="cluster:ml-dev"]');
    await header.click();
    await page.waitForURL((url) => url.searchParams.get('zoom') === 'cluster:ml-dev');
    await shownAsApi(page, { query: '?cluster=ml-dev', reload: true, summary: true });
    await page.getByTestId('zoom-out').click();
    await page.waitForURL((url) => !url.searchParams.has('zoom'));
    const [first] = await page
      .locator('[data-testid="heatmap"] svg.packed a[data-i]')
      .evaluateAll((as) => as.map((a) => a.dataset.i));
    await page.locator(`[data-testid="heatmap"] a[data-i="${first}"] rect`).first().click();
    await page.waitForURL((url) => url.searchParams.get('zoom') === `instance:${first}`);
    assert.equal(await page.locator(`[data-testid="heatmap"] g[data-i="${first}"]`).count(), 1);
    await context.close();
  });

  test('the filters work as a form', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(BASE_URL + '/');
    await page.getByTestId('filter-cluster').selectOption('batch-sim');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((url) => url.searchParams.get('cluster') === 'batch-sim');
    await shownAsApi(page, { query: '?cluster=batch-sim', reload: true, summary: true });
    await context.close();
  });

  test('a link with a selected GPU renders its panel on the server', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    const [key, gpu] = [...(await apiGpus())].find(([, g]) => g.containers.length > 0);
    await page.goto(`${BASE_URL}/?gpu=${encodeURIComponent(key)}`);
    assert.equal(await page.getByTestId('gpu-uuid').textContent(), gpu.uuid);
    assert.equal(await page.locator('rect.sel').count(), 1);
    await context.close();
  });
});
