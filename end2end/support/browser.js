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
