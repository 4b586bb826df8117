// The reconciliation with Cost Explorer, on the sealed months' console (scripts/test.sh): 32 days
// of the demo's past, of which Cost Explorer reads each day closed for a day within its 14, once
// the replay is done. A day read is priced at the bill: the page lists it beside Cost Explorer's
// figure with the difference explained, and the cost review of that day names Cost Explorer as
// the source of its prices; a day not read is at list prices and says why.
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

// Two days ago (UTC), the newest day Cost Explorer reads, and its month.
const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
const month = twoDaysAgo.slice(0, 7);

/// The month's reconciliation once Cost Explorer's newest due day is read.
const billed = () =>
  waitUntil(`Cost Explorer to be read for ${twoDaysAgo} (GET /api/v1/cost/reconciliation?month=${month})`, async () => {
    const answer = await api(`/api/v1/cost/reconciliation?month=${month}`);
    return answer.days.some((d) => d.day === twoDaysAgo && d.source === 'cost-explorer') ? answer : null;
  });

describe('reconciliation with Cost Explorer', () => {
  test('a day read from Cost Explorer shows both figures and what explains the difference; its cost review is at the bill', async () => {
    const answer = await billed();
    const { context, page, problems } = await openPage(browser);
    await page.goto(`${BASE_URL}/cost/reconciliation?month=${month}`);
    await waitForHydration(page);
    const row = page.locator(`[data-testid="reconciliation-day"][data-day="${twoDaysAgo}"]`);
    assert.equal(await row.getAttribute('data-source'), 'cost-explorer');
    const day = answer.days.find((d) => d.day === twoDaysAgo);
    assert.equal(await row.getByTestId('day-console').textContent(), money(day.console_cents));
    assert.equal(await row.getByTestId('day-cost-explorer').textContent(), money(day.cost_explorer_cents));
    assert.equal(await row.getByTestId('day-difference').textContent(), money(day.difference_cents));
    // The parts explained add up to the difference.
    assert.equal(day.explained.reduce((sum, e) => sum + e.cents, 0), day.difference_cents, JSON.stringify(day));
    assert.equal(await page.getByTestId('reconciliation-day').count(), answer.days.length);
    assert.match(await page.getByTestId('reconciliation-totals').textContent(), new RegExp(`${answer.days_billed} days at the bill`));
    // The cost review of that day is priced at what Cost Explorer billed.
    const report = await api(`/api/v1/cost?period=custom&from=${twoDaysAgo}&to=${twoDaysAgo}`);
    assert.ok(report.prices.length > 0 && report.prices.every((p) => p.price.source === 'cost-explorer'), JSON.stringify(report.prices));
    assert.ok(report.notes.some((n) => n.includes("priced at Cost Explorer's amortized cost")), JSON.stringify(report.notes));
    assert.equal(report.unpriced.length, 0, 'the Capacity Block p5 is priced by the bill');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('today is at list prices and says why; the CSV has the same days; a bad month says how to write one, without JavaScript too', async () => {
    const answer = await billed();
    const today = new Date().toISOString().slice(0, 10);
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(`${BASE_URL}/cost/reconciliation?month=${today.slice(0, 7)}`);
    const row = page.locator(`[data-testid="reconciliation-day"][data-day="${today}"]`);
    assert.equal(await row.getAttribute('data-source'), 'list-prices');
    assert.match(await row.textContent(), /closed for 24 hours/);
    const csv = await (await fetch(`${BASE_URL}/api/v1/cost/reconciliation?month=${month}&format=csv`)).text();
    assert.equal(csv.split('\n').filter((l) => l.startsWith('day,')).length, answer.days.length);
    await page.goto(`${BASE_URL}/cost/reconciliation?month=2026-13`);
    assert.match(await page.getByTestId('reconciliation-query-error').textContent(), /YYYY-MM/);
    await context.close();
  });
});
