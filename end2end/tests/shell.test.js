// The app shell: hydration, a reactive control, a server function, navigation, and the same
// pages read with JavaScript off.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';

import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

describe('hydrated', () => {
  test('the fleet page lists the simulated clusters read through the SDK', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const badge = page.getByTestId('fleet-source');
    assert.equal(await badge.textContent(), 'Simulated fleet (demo)');
    assert.match(await badge.getAttribute('title'), /emulator/);
    const rows = page.getByTestId('cluster-table').locator('tbody tr');
    assert.equal(await rows.count(), 3);
    const prod = rows.filter({ hasText: 'inference-prod' });
    assert.equal(await prod.locator('td').first().textContent(), '12', 'container instances');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the theme switch reacts to a click and the choice survives a reload', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const toggle = page.getByTestId('theme-toggle');
    assert.equal(await toggle.textContent(), 'Theme: system');

    await toggle.click();
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
    assert.equal(await toggle.textContent(), 'Theme: light');
    await toggle.click();
    assert.equal(await toggle.textContent(), 'Theme: dark');

    await page.reload();
    assert.equal(await page.getByTestId('theme-toggle').textContent(), 'Theme: dark');
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    assert.deepEqual(problems, [], 'no console errors or CSP violations');
    await context.close();
  });

  test('the status card asks the server again through a server function', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    const before = await page.getByTestId('status-time').textContent();

    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/console_status') && r.request().method() === 'POST'),
      page.getByTestId('status-refresh').click(),
    ]);
    assert.equal(response.status(), 200);
    const answer = await response.json();
    await page.waitForFunction(
      (time) => document.querySelector('[data-testid="status-time"]')?.textContent === time,
      answer.server_time,
    );
    assert.notEqual(answer.server_time, before, 'the server answered anew');
    assert.equal(await page.getByTestId('status-version').textContent(), answer.version);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the navigation moves between sections without a full reload', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(BASE_URL + '/');
    await waitForHydration(page);
    await page.evaluate(() => {
      window.__sameDocument = true;
    });
    await page.getByRole('link', { name: 'Deployments' }).click();
    await page.waitForURL(BASE_URL + '/deployments');
    assert.equal(await page.locator('h1').textContent(), 'Deployments');
    assert.equal(await page.getByRole('link', { name: 'Deployments' }).getAttribute('aria-current'), 'page');
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'client-side navigation');
    assert.equal(await page.title(), 'Deployments · gpushare');
    assert.deepEqual(problems, []);
    await context.close();
  });
});

describe('without JavaScript', () => {
  test('the fleet page is rendered on the server, clusters and status included', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    const response = await page.goto(BASE_URL + '/');
    assert.equal(response.status(), 200);
    assert.match(await page.locator('h1').textContent(), /Fleet/);
    assert.equal(await page.getByTestId('fleet-source').textContent(), 'Simulated fleet (demo)');
    const clusters = await page.getByTestId('cluster-table').locator('tbody th').allTextContents();
    assert.deepEqual(clusters, ['batch-sim', 'inference-prod', 'ml-dev']);
    assert.match(await page.getByTestId('status-version').textContent(), /^\d+\.\d+\.\d+/);
    // Every section is a plain link to a page the server renders, the one it names.
    const sections = await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link')
      .evaluateAll((links) => links.map((a) => [a.textContent.trim(), a.getAttribute('href')]));
    const expected = [
      ['Fleet', '/'],
      ['Capacity', '/capacity'],
      ['Task definitions', '/task-definitions'],
      ['Deployments', '/deployments'],
      ['Audit log', '/audit'],
      ['Cost', '/cost'],
      ['Approvals', '/approvals'],
    ];
    assert.deepEqual(sections.map(([, href]) => href), expected.map(([, href]) => href));
    for (const [i, [name, href]] of sections.entries()) {
      // The approvals link may carry how many requests wait.
      assert.ok(name.startsWith(expected[i][0]), `${name} is not ${expected[i][0]}`);
      const answer = await fetch(BASE_URL + href, { headers: { accept: 'text/html' } });
      assert.equal(answer.status, 200, `${name}: ${href}`);
      const html = await answer.text();
      assert.match(html, /<h1[\s>]/, `${name}: ${href} has a heading`);
      assert.doesNotMatch(html, /Page not found/, `${name}: ${href}`);
    }
    assert.equal(await page.locator('body[data-hydrated]').count(), 0, 'nothing ran in the browser');
    await context.close();
  });

  test('links work as plain links and unknown pages answer 404', async () => {
    const { context, page } = await openPage(browser, { javaScriptEnabled: false });
    await page.goto(BASE_URL + '/');
    await page.getByRole('link', { name: 'Cost' }).click();
    await page.waitForURL(BASE_URL + '/cost');
    assert.equal(await page.locator('h1').textContent(), 'Cost');

    const response = await page.goto(BASE_URL + '/no-such-page');
    assert.equal(response.status(), 404);
    assert.equal(await page.locator('h1').textContent(), 'Page not found');
    await context.close();
  });
});

describe("the site's files", () => {
  const pkg = new URL('../../target/site/pkg/', import.meta.url);
  // The bytes as sent, not decoded: node's fetch would decode them.
  const raw = (path, encoding) =>
    new Promise((resolve, reject) => {
      const headers = encoding ? { 'accept-encoding': encoding } : {};
      http
        .get(BASE_URL + path, { headers }, (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => resolve({ response, body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });

  test('the WebAssembly is sent as the copy compressed at build time, as each client accepts', async () => {
    const wasm = readFileSync(new URL('gpushare.wasm', pkg));
    const brotli = await raw('/pkg/gpushare.wasm', 'br, gzip');
    assert.equal(brotli.response.statusCode, 200);
    assert.equal(brotli.response.headers['content-encoding'], 'br');
    assert.equal(brotli.response.headers['content-type'], 'application/wasm');
    assert.ok(
      brotli.body.equals(readFileSync(new URL('gpushare.wasm.br', pkg))),
      'the bytes of gpushare.wasm.br, not a compression made for this request',
    );
    assert.ok(zlib.brotliDecompressSync(brotli.body).equals(wasm), 'which decode to the WebAssembly');
    assert.ok(brotli.body.length < wasm.length / 3, `${brotli.body.length} of ${wasm.length} bytes`);

    const gzip = await raw('/pkg/gpushare.wasm', 'gzip');
    assert.equal(gzip.response.headers['content-encoding'], 'gzip');
    assert.ok(zlib.gunzipSync(gzip.body).equals(wasm));

    const plain = await raw('/pkg/gpushare.wasm');
    assert.equal(plain.response.headers['content-encoding'], undefined);
    assert.ok(plain.body.equals(wasm));
  });

  test('the stylesheet and the script are sent compressed too', async () => {
    for (const file of ['gpushare.css', 'gpushare.js']) {
      const { response, body } = await raw('/pkg/' + file, 'br');
      assert.equal(response.headers['content-encoding'], 'br', file);
      assert.ok(zlib.brotliDecompressSync(body).equals(readFileSync(new URL(file, pkg))), file);
    }
  });
});
