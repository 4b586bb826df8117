// Starts Debian's Chromium through playwright-core, with the flags this machine needs.
import { chromium } from 'playwright-core';

export const BASE_URL = process.env.GPUSHARE_URL ?? 'http://127.0.0.1:3000';

const CHROMIUM = process.env.GPUSHARE_CHROMIUM ?? '/usr/bin/chromium';

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

// A page that records console errors, uncaught exceptions and CSP violations.
export async function openPage(browser, { javaScriptEnabled = true } = {}) {
  const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 1366, height: 850 } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, problems };
}

// Waits until the WebAssembly half has taken over the page.
export async function waitForHydration(page) {
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 15_000 });
}

// A page whose requests carry `headers` (the sign-in proxy's, in the tests that play it), and
// that records uncaught exceptions, and console errors unless `consoleErrors` is false.
export async function openPageAs(browser, headers, { consoleErrors = true } = {}) {
  const context = await browser.newContext({ extraHTTPHeaders: headers, viewport: { width: 1366, height: 850 } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (consoleErrors && message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, problems };
}

// A JSON API call to `base` with `headers`: its status and parsed body.
export async function apiAs(base, path, headers, init = {}) {
  const response = await fetch(base + path, { ...init, headers: { ...headers, ...(init.headers ?? {}) } });
  return { status: response.status, body: await response.json() };
}

// Polls `check` (an async function) every `every` ms until it returns something truthy, and
// returns that; after `timeout` ms it fails, saying what it waited for and what it saw last.
export async function waitUntil(what, check, { timeout = 30_000, every = 200 } = {}) {
  const started = Date.now();
  let last;
  for (;;) {
    try {
      const found = await check();
      if (found) return found;
      last = found;
    } catch (error) {
      last = error;
    }
    if (Date.now() - started >= timeout) {
      throw new Error(`waited ${timeout / 1000} s for ${what}; the last check gave ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}
