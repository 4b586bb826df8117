// Every page, and the fleet page in its overview and zoomed forms, has no WCAG 2 A or AA
// violation that axe-core finds, in both themes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';
import { accessibilityViolations } from '../support/axe.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const pages = [
  '/',
  '/?group=team&sort=utilization',
  '/?colour=compute&group=instance-type',
  '/?zoom=cluster%3Ainference-prod',
  '/task-definitions',
  '/deployments',
  '/deployments/new?cluster=batch-sim',
  '/audit',
  '/cost',
  '/approvals',
  '/capacity',
  '/?group=capacity-provider',
];

describe('accessibility', () => {
  for (const theme of ['light', 'dark']) {
    test(`no WCAG 2 A/AA violations on the console's pages, ${theme} theme`, async () => {
      const { context, page } = await openPage(browser);
      await context.addCookies([{ name: 'gpushare-theme', value: theme, url: BASE_URL }]);
      const found = [];
      for (const path of pages) {
        await page.goto(BASE_URL + path);
        await waitForHydration(page);
        for (const violation of await accessibilityViolations(page)) found.push(`${path} — ${violation}`);
      }
      assert.deepEqual(found, []);
      await context.close();
    });
  }
});
