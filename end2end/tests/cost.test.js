// The cost review: change the view, sort, export the table as CSV, print it, and the same page
// with JavaScript off.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';
import { untilOneSnapshot } from '../support/snapshot.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const money = (cents) =>
  '$' + Math.floor(cents / 100).toLocaleString('en-US') + '.' + String(cents % 100).padStart(2, '0');

async function apiReport(query = '') {
  const response = await fetch(`${BASE_URL}/api/v1/cost${query}`);
  assert.equal(response.status, 200);
  return response.json();
}

// Today's report and the consolidation plan price the fleet as last read, and the demo's elastic
// capacity launches and retires instances between two reads. A page and the API's JSON are
// compared when they come from the same snapshot (the page's `data-taken-at`, the JSON's
// `taken_at`). The API answers from the latest snapshot, and a page takes longer to load and
// hydrate than the console takes to read the fleet again, so the page is loaded again between two
// reads of the API, and compared with the one of its snapshot. Fails after 20 s with what it saw.
async function asShown(page, testId, read, { hydrated = false } = {}) {
  return untilOneSnapshot({
    readPage: () => page.getByTestId(testId).getAttribute('data-taken-at'),
    readApi: read,
    pageAt: (shownAt) => shownAt,
    apiAt: (answer) => answer.taken_at,
    matches: (_, answer) => answer,
    between: async () => {
      const before = await read();
      await page.reload();
      if (hydrated) await waitForHydration(page);
      return before;
    },
    describe: (shownAt, before, after) =>
      `the page (the fleet as read at ${shownAt}) and the API (at ${before?.taken_at} and ${after.taken_at}) never showed one snapshot in 20 s`,
  });
}

// A CSV held to the JSON answer it must agree with: read between two reads of that answer until
// the two are `alike`, five times at most (the console reads the fleet again every few seconds).
async function csvBetween(href, read, alike) {
  for (let pairs = 0; pairs < 5; pairs++) {
    const before = await read();
    const response = await fetch(BASE_URL + href);
    const csv = await response.text();
    assert.equal(response.status, 200, `${href}: ${csv}`);
    const after = await read();
    if (alike(before, after)) return { csv, answer: after };
  }
  assert.fail(`the answer changed between each of five reads of its JSON and the next, around ${href}`);
}

// Answers of the API from one snapshot, read one after the other until they are.
async function ofOneSnapshot(...reads) {
  let seen = [];
  for (let tries = 0; tries < 10; tries++) {
    const answers = [];
    for (const read of reads) answers.push(await read());
    if (answers.every((a) => a.taken_at === answers[0].taken_at)) return answers;
    seen = answers.map((a) => a.taken_at);
  }
  assert.fail(`ten reads in a row straddled a refresh of the fleet: ${seen.join(', ')}`);
}

const rowNames = (page) => page.getByTestId('cost-table').locator('tbody th').allTextContents();

describe('cost review', () => {
  test('the view changes by its form, sorts by a column, and its CSV is its table', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/cost?period=now');
    await waitForHydration(page);
    const byTeam = await asShown(page, 'cost-taken-at', () => apiReport('?period=now'), { hydrated: true });
    assert.equal(await page.getByTestId('cost-total').textContent(), money(byTeam.total_cents));
    assert.equal(await page.getByTestId('cost-table-total').textContent(), money(byTeam.total_cents));

    const form = page.getByTestId('cost-form');
    await form.getByLabel('Group by').selectOption('cluster');
    await form.getByLabel("Today's allocations over").selectOption('day');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('group') === 'cluster' && url.searchParams.get('span') === 'day');
    // The page has the new view's report once its caption says so.
    await page.waitForFunction(() => /^Grouped by cluster, over /.test(document.querySelector('.print-only')?.textContent ?? ''));
    const byCluster = await asShown(page, 'cost-taken-at', () => apiReport('?period=now&group=cluster&span=day'), { hydrated: true });
    assert.equal(await page.getByTestId('cost-total').textContent(), money(byCluster.total_cents));
    const allocated = byCluster.rows.filter((r) => r.kind === 'allocated').map((r) => r.name);
    assert.deepEqual((await rowNames(page)).slice(0, allocated.length), allocated);

    await page.getByTestId('cost-sort-name').click();
    await page.waitForURL((url) => url.searchParams.get('sort') === 'name' && url.searchParams.get('group') === 'cluster');
    await page.waitForSelector('th[aria-sort="ascending"] [data-testid="cost-sort-name"]');
    const names = (await rowNames(page)).slice(0, allocated.length);
    assert.deepEqual(names, [...allocated].sort());

    // The CSV link keeps the view, and its lines are the table's rows and total, then the
    // prices, the notes and the method a spreadsheet needs to read them.
    const href = await page.getByTestId('cost-csv').getAttribute('href');
    assert.equal(href, '/api/v1/cost?period=now&group=cluster&span=day&sort=name&format=csv');
    // Today's report is of live data: the demo's capacity launches and retires instances, which
    // adds or drops a row, a price line or a note. The CSV is held to a JSON read of the same
    // report: one with the same rows and as many price lines and notes just before and just after
    // the CSV was read.
    const shape = (report) =>
      JSON.stringify([
        report.rows.map((r) => [r.name, r.kind]),
        report.prices.length,
        report.unpriced.length,
        report.notes.length,
      ]);
    const { csv, answer: sorted } = await csvBetween(
      href,
      () => apiReport('?period=now&group=cluster&span=day&sort=name'),
      (before, after) => shape(before) === shape(after),
    );
    const lines = csv.trim().split('\n');
    // As many rows as that report, which the page's table showed sorted above (its rows may have
    // changed since, with the fleet).
    const rows = sorted.rows.length;
    assert.equal(lines.length, rows + 2 + sorted.prices.length + sorted.unpriced.length + sorted.notes.length + 1);
    assert.match(lines.at(-1), /,method,,,,,$/);
    assert.deepEqual(lines.slice(1, rows + 1).map((line) => line.split(',').slice(0, 2).join(',')), sorted.rows.map((r) => `${r.name},${r.kind}`));
    assert.match(lines[rows + 1], new RegExp(`^total,total,${Math.floor(sorted.total_cents / 100)}\\.`));
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('a recorded period: the last 7 days charted by day, and a custom day against the day before', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/cost?period=now');
    await waitForHydration(page);
    const form = page.getByTestId('cost-form');
    await form.getByLabel('Period').selectOption('7d');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('period') === '7d');
    // One bar per calendar day the 7 days touch, the replayed days with cost on them: 8, or 7
    // when the period's hour-aligned ends fall on midnight (between 23:00 and 24:00 UTC).
    await page.waitForSelector('[data-testid="cost-chart"] g[data-day]');
    const days = page.getByTestId('cost-chart').locator('g[data-day]');
    const { range } = await apiReport('?period=7d');
    const touched = Math.ceil(range.to / 86_400) - Math.floor(range.from / 86_400);
    assert.ok(touched === 7 || touched === 8, JSON.stringify(range));
    assert.equal(await days.count(), touched);
    const drawn = await page.getByTestId('cost-chart').locator('rect[fill]').count();
    assert.ok(drawn > 5, `${drawn} segments drawn`);

    // Yesterday, a day the server replayed in full, against the day before it.
    const day = (ago) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    await form.getByLabel('Period').selectOption('custom');
    await form.getByLabel('From (custom)').fill(day(1));
    await form.getByLabel('To (custom)').fill(day(1));
    await form.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('period') === 'custom' && url.searchParams.get('from') === day(1));
    const report = await apiReport(`?period=custom&from=${day(1)}&to=${day(1)}`);
    assert.ok(report.total_cents > 0, JSON.stringify(report.notes));
    await page.waitForFunction(
      (total) => document.querySelector('[data-testid="cost-total"]')?.textContent === total,
      money(report.total_cents),
    );
    assert.ok(report.previous_total_cents !== null, 'the day before has history');
    assert.match(await page.getByTestId('cost-change').textContent(), /\$/);
    assert.equal(await page.getByTestId('cost-table').locator('thead th').last().textContent(), 'Change');

    // The daily CSV: a line per day and team, then the prices, notes and method.
    const daily = await (await fetch(BASE_URL + (await page.getByTestId('cost-csv-daily').getAttribute('href')))).text();
    const lines = daily.trim().split('\n');
    assert.equal(lines[0], 'day,team,kind,cost_usd,gpu_hours,unused_usd,recorded_hours');
    const trailer = /,(price|unpriced|note|method),{5}$/;
    const dayLines = lines.slice(1).filter((line) => !trailer.test(line));
    assert.ok(dayLines.length > 0 && dayLines.every((line) => line.startsWith(day(1) + ',')), daily);
    assert.match(lines.at(-1), /,method,{5}$/);
    // The same lines in FOCUS's columns.
    const focus = await (await fetch(BASE_URL + (await page.getByTestId('cost-focus').getAttribute('href')))).text();
    const focusLines = focus.trim().split('\n');
    assert.match(focusLines[0], /^BilledCost,BillingAccountId,BillingCurrency,/);
    assert.equal(focusLines.length, dayLines.length + 1, focus);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('printed, the report has its totals and tables and no navigation', async () => {
    const { context, page } = await openPage(browser);
    await page.goto(BASE_URL + '/cost?group=service');
    await waitForHydration(page);
    await page.emulateMedia({ media: 'print' });
    assert.equal(await page.locator('.app-header').isVisible(), false, 'no navigation');
    assert.equal(await page.getByTestId('cost-form').isVisible(), false, 'no form');
    assert.equal(await page.getByTestId('cost-total').isVisible(), true);
    assert.equal(await page.getByTestId('cost-table').isVisible(), true);
    assert.equal(await page.getByTestId('cost-rule').isVisible(), true);
    assert.match(await page.locator('.print-only').textContent(), /Grouped by service, over last 30 days \(/);
    assert.equal(await page.getByTestId('cost-chart').isVisible(), true, 'the chart is printed');
    const pdf = await page.pdf({ format: 'A4', printBackground: true });
    assert.equal(pdf.subarray(0, 5).toString(), '%PDF-');
    assert.ok(pdf.length > 10_000, `a PDF of ${pdf.length} bytes`);
    await context.close();
  });
});

describe('cost review, JavaScript off', () => {
  test('the server renders the view of the URL, and the form and sort links work', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(BASE_URL + '/cost?period=now&group=instance_type&sort=name');
    const report = await asShown(page, 'cost-taken-at', () => apiReport('?period=now&group=instance_type&sort=name'));
    assert.equal(await page.getByTestId('cost-total').textContent(), money(report.total_cents));
    const allocated = report.rows.filter((r) => r.kind === 'allocated').map((r) => r.name);
    assert.deepEqual((await rowNames(page)).slice(0, allocated.length), allocated);
    await page.getByTestId('cost-form').getByLabel('Idle').selectOption('share');
    await page.getByTestId('cost-form').getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('idle') === 'share' && url.searchParams.get('sort') === 'name');
    await page.getByTestId('cost-sort-cost').click();
    await page.waitForURL((url) => url.searchParams.get('idle') === 'share' && !url.searchParams.has('sort'));
    const shared = await asShown(page, 'cost-taken-at', () => apiReport('?period=now&group=instance_type&idle=share'));
    assert.equal(await page.getByTestId('cost-table').locator('tbody tr').count(), shared.rows.length);
    // The split rule is the view's too, and the page writes out the rule it followed.
    await page.getByTestId('cost-form').getByLabel('MPS GPUs split by').selectOption('max');
    await page.getByTestId('cost-form').getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('split') === 'max' && url.searchParams.get('idle') === 'share');
    assert.match(await page.getByTestId('cost-rule').textContent(), /larger of each container's share of the GPU's memory and its compute limit/);
    const larger = await asShown(page, 'cost-taken-at', () => apiReport('?period=now&group=instance_type&idle=share&split=max'));
    assert.equal(await page.getByTestId('cost-total').textContent(), money(larger.total_cents));
    const [byShare, byLarger] = await ofOneSnapshot(
      () => apiReport('?period=now&group=instance_type&idle=share'),
      () => apiReport('?period=now&group=instance_type&idle=share&split=max'),
    );
    assert.equal(byLarger.total_cents, byShare.total_cents, 'the rule moves cost between rows, not the bill');
    await context.close();
  });
});

describe('consolidation plan', () => {
  async function apiPlan(query = '') {
    const response = await fetch(`${BASE_URL}/api/v1/cost/plan${query}`);
    assert.equal(response.status, 200);
    return response.json();
  }

  test('reached from the cost page, it lists what to drain and where tasks go, and its form keeps the view', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/cost?period=now');
    await waitForHydration(page);
    await page.getByTestId('cost-plan-link').click();
    await page.waitForURL(BASE_URL + '/cost/plan');
    await page.waitForSelector('[data-testid="plan-saving"]');
    const plan = await asShown(page, 'plan-taken-at', () => apiPlan(), { hydrated: true });
    assert.ok(plan.drains.length > 0, 'the demo has instances to drain');
    assert.equal(await page.getByTestId('plan-saving').textContent(), money(plan.net_saving_cents_per_month));
    assert.equal(await page.getByTestId('plan-drain').count(), plan.drains.length);
    const first = plan.drains[0];
    assert.match(await page.getByTestId('plan-table').textContent(), new RegExp(first.ec2_instance_id));
    assert.equal(await page.getByTestId('plan-blast').locator('tbody tr').count(), 6);

    // More spare keeps more instances: the form's URL is the view, and the page follows it.
    await page.getByTestId('plan-form').getByLabel('Spare GPU memory, %').fill('60');
    await page.getByTestId('plan-form').getByRole('button', { name: 'Plan' }).click();
    await page.waitForURL((url) => url.searchParams.get('spare') === '60');
    // The page has the new plan once its caption says so.
    await page.waitForFunction(() => /60 % of each kept instance/.test(document.querySelector('[data-testid="plan-taken-at"]')?.textContent ?? ''));
    const spared = await asShown(page, 'plan-taken-at', () => apiPlan('?spare=60'), { hydrated: true });
    assert.equal(await page.getByTestId('plan-saving').textContent(), money(spared.net_saving_cents_per_month));
    assert.equal(await page.getByTestId('plan-who-acts').count(), spared.drains.length);
    const [tight, loose] = await ofOneSnapshot(() => apiPlan(), () => apiPlan('?spare=60'));
    assert.ok(loose.saving_cents_per_month <= tight.saving_cents_per_month, `${loose.saving_cents_per_month} > ${tight.saving_cents_per_month}`);
    const href = await page.getByTestId('plan-csv').getAttribute('href');
    assert.equal(href, '/api/v1/cost/plan?spare=60&format=csv');
    // The CSV is held to a JSON read of the same snapshot's plan, one just before and just after it.
    const held = await csvBetween(href, () => apiPlan('?spare=60'), (before, after) => before.taken_at === after.taken_at);
    const csv = held.csv.trim().split('\n');
    const same = held.answer;
    const moves = same.drains.reduce((n, d) => n + Math.max(d.moves.length, 1), 0);
    // Each line per instance and move, then the gross total, what is still billed and the net.
    assert.equal(csv.length, moves + 4);
    assert.match(csv[csv.length - 1], new RegExp('^net saving,,,,' + (same.net_saving_cents_per_month / 100).toFixed(2) + ','));
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('without JavaScript the server renders the plan of the URL, and a bad spare says what to give', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(BASE_URL + '/cost/plan?spare=0');
    const plan = await asShown(page, 'plan-taken-at', () => apiPlan('?spare=0'));
    assert.equal(await page.getByTestId('plan-saving').textContent(), money(plan.net_saving_cents_per_month));
    assert.equal(await page.getByTestId('plan-drain').count(), plan.drains.length);
    await page.goto(BASE_URL + '/cost/plan?spare=200');
    assert.match(await page.getByTestId('plan-query-error').textContent(), /0 to 90/);
    await page.emulateMedia({ media: 'print' });
    assert.equal(await page.getByTestId('plan-form').isVisible(), false, 'the form is not printed');
    assert.equal(await page.getByTestId('plan-method').isVisible(), true);
    await context.close();
  });
});
