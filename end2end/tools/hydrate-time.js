// Times a page in headless Chromium: navigation start to hydrated (body[data-hydrated]), over
// several fresh loads. Prints one JSON line: {"runs": n, "median_ms": ..., "max_ms": ...}.
// node tools/hydrate-time.js [path] [runs]; the server must be running (GPUSHARE_URL).
import { BASE_URL, launch, openPage, waitForHydration } from '../support/browser.js';

const [path = '/', runs = '5'] = process.argv.slice(2);
const browser = await launch();
const times = [];
try {
  for (let n = 0; n < Number(runs); n += 1) {
    const { context, page } = await openPage(browser);
    await page.goto(BASE_URL + path, { waitUntil: 'commit' });
    await waitForHydration(page);
    // performance.now() counts from the navigation's start.
    times.push(await page.evaluate(() => performance.now()));
    await context.close();
  }
} finally {
  await browser.close();
}
times.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    runs: times.length,
    median_ms: Math.round(times[Math.floor(times.length / 2)]),
    max_ms: Math.round(times[times.length - 1]),
  }),
);
