// Sealed months, on a console of their own (scripts/test.sh) that replays 32 days of the demo's
// past, so last month has history whatever the day, and is sealed once the replay and the
// markets' first reads are done. The cost page says
// the month is sealed and links to it; its page shows the seal, what today's prices would change
// and, for an admin (everyone, on a console without sign-in on loopback), the re-pricing form.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { BASE_URL, launch, openPage, waitForHydration, waitUntil } from '../support/browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const money = (cents) =>
  (cents < 0 ? '-' : '') + '$' + Math.floor(Math.abs(cents) / 100).toLocaleString('en-US') + '.' + String(Math.abs(cents) % 100).padStart(2, '0');

const api = async (path) => {
  const response = await fetch(BASE_URL + path);
  assert.equal(response.status, 200, path);
  return response.json();
};

/// The seals, once last month is sealed.
const sealedMonths = () =>
  waitUntil('last month to be sealed (GET /api/v1/cost/months)', async () => {
    const seals = await api('/api/v1/cost/months');
    return seals.length > 0 ? seals : null;
  });

describe('sealed months', () => {
  test('last month is sealed: the cost page says so of a day of it and links to what re-pricing it would change', async () => {
    const seals = await sealedMonths();
    const { month, version } = seals[0];
    // The month's first day (last month, but for the ten minutes after a month closes, when the
    // newest seal is the month before).
    const period = `?period=custom&from=${month}-01&to=${month}-01`;
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/cost' + period);
    await waitForHydration(page);
    const report = await api('/api/v1/cost' + period);
    assert.deepEqual(report.sealed.map((s) => s.month), [month]);
    assert.match(await page.getByTestId('cost-sealed').textContent(), new RegExp(`${month} is sealed \\(version ${version},`));
    assert.equal(await page.getByTestId('cost-total').textContent(), money(report.total_cents));
    await page.getByTestId('cost-sealed-link').click();
    await page.waitForURL((url) => url.pathname === '/cost/months' && url.searchParams.get('month') === month);
    await page.getByTestId('repricing').waitFor();
    const look = await api(`/api/v1/cost/months/${month}`);
    assert.match(
      await page.getByTestId('repricing-totals').textContent(),
      new RegExp(`Sealed \\(version ${version}\\): ${money(look.repricing.before_total_cents).replace(/[$.]/g, '\\$&')}\\.`),
    );
    assert.equal(await page.getByTestId('months-row').count(), seals.length);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('an admin re-prices the month with a reason: a new version, audited, in the table', async () => {
    const seals = await sealedMonths();
    const { month } = seals[0];
    const versions = seals.filter((s) => s.month === month).length;
    const { context, page, problems } = await openPage(browser);
    await page.goto(`${BASE_URL}/cost/months?month=${month}`);
    await waitForHydration(page);
    await page.getByTestId('reprice-reason').fill('the end-to-end test re-seals it');
    await page.getByTestId('reprice').click();
    assert.match(await page.getByTestId('reprice-result').textContent(), new RegExp(`${month} is re-priced: version ${versions + 1} is in force`));
    // The table is read again after the action.
    await page.waitForSelector(`[data-testid="months-row"][data-month="${month}"][data-version="${versions + 1}"]`);
    const after = await api('/api/v1/cost/months');
    assert.equal(after.filter((s) => s.month === month).length, versions + 1);
    assert.equal(after[0].reason, 'the end-to-end test re-seals it');
    const records = await api('/api/v1/audit?action=reprice');
    assert.ok(records.some((r) => r.resource === `cost/${month}` && r.outcome === 'succeeded' && r.description === 'the end-to-end test re-seals it'), JSON.stringify(records));
    const report = await api(`/api/v1/cost?period=custom&from=${month}-01&to=${month}-01`);
    assert.equal(report.sealed[0].version, versions + 1);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('without JavaScript the server renders the seals and the month asked for; a bad month says how to write one', async () => {
    const seals = await sealedMonths();
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(`${BASE_URL}/cost/months?month=${seals[0].month}`);
    assert.equal(await page.getByTestId('months-row').count(), (await api('/api/v1/cost/months')).length);
    assert.equal(await page.getByTestId('repricing').count(), 1);
    await page.goto(`${BASE_URL}/cost/months?month=2026-13`);
    assert.match(await page.getByTestId('months-query-error').textContent(), /YYYY-MM/);
    assert.equal(await page.getByTestId('repricing').count(), 0);
    await context.close();
  });
});
