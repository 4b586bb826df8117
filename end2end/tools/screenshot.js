// Saves a screenshot of a console page: node tools/screenshot.js [path] [output.png] [theme]
// The server must be running (GPUSHARE_URL, default http://127.0.0.1:3000).
import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';

const [path = '/', output = '../docs/screenshot.png', theme = 'light'] = process.argv.slice(2);
const browser = await launch();
try {
  const { context, page } = await openPage(browser);
  await context.addCookies([{ name: 'gpushare-theme', value: theme, url: BASE_URL }]);
  await page.goto(BASE_URL + path);
  await waitForHydration(page);
  await page.screenshot({ path: output, fullPage: true });
  console.log(`saved ${output}`);
} finally {
  await browser.close();
}
