// Times how long after a rollout ends in the emulator the browser shows it. For each run: a
// new revision of the service (one more variable) is registered and deployed through the API,
// the watch page is opened in headless Chromium, and two clocks run on this machine — a poller
// that asks the emulator itself (DescribeServices on its wire protocol) every 20 ms for the
// moment the deployment is COMPLETED, and the page, which notes the moment its result turns
// "succeeded". Prints one JSON line: {"runs", "median_ms", "max_ms", "samples_ms"}.
// node tools/rollout-latency.js <cluster> <service> [runs]; the server must be running
// (GPUSHARE_URL) on its embedded emulator.
import { BASE_URL, launch, openPage } from '../support/browser.js';

const [cluster, service, runs = '5'] = process.argv.slice(2);
if (!cluster || !service) {
  console.error('usage: node tools/rollout-latency.js <cluster> <service> [runs]');
  process.exit(2);
}

async function api(path, init) {
  const response = await fetch(BASE_URL + path, init);
  const body = await response.json();
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}
const post = (path, body) => api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const status = await (await fetch(BASE_URL + '/api/console_status', { method: 'POST' })).json();
const emulator = status.fleet_source.endpoint;
async function deployments() {
  const response = await fetch(emulator, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': 'AmazonEC2ContainerServiceV20141113.DescribeServices',
    },
    body: JSON.stringify({ cluster, services: [service] }),
  });
  return (await response.json()).services[0].deployments;
}

const browser = await launch();
const samples = [];
// The snapshot's services lag behind a deploy by up to one refresh: after the first run, the
// revision running is the one the last run rolled out.
const row = (await api(`/api/v1/services?cluster=${cluster}`)).find((r) => r.service.name === service);
let running = row.revision;
try {
  for (let n = 0; n < Number(runs); n += 1) {
    const source = (await api(`/api/v1/task-definitions/${row.family}/${running}`)).task_definition;
    const first = source.containerDefinitions[0];
    first.environment = [...(first.environment ?? []).filter((e) => e.name !== 'RUN'), { name: 'RUN', value: String(Date.now()) }];
    const registered = await post(`/api/v1/task-definitions/${row.family}/${running}/register`, { task_definition: source });
    const deployed = await post(`/api/v1/services/${cluster}/${service}/deploy`, {
      revision: registered.registered.revision,
      expected_revision: running,
    });
    running = registered.registered.revision;
    const { context, page } = await openPage(browser);
    await page.goto(`${BASE_URL}/rollouts/${deployed.audit_id}`);
    await page.evaluate(() => {
      window.shownAt = null;
      const check = () => {
        if (document.querySelector('[data-testid="watch-result"]')?.dataset.result === 'succeeded' && !window.shownAt) {
          window.shownAt = Date.now();
        }
      };
      new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true });
      check();
    });
    let endedAt = null;
    while (!endedAt) {
      const ours = (await deployments()).find((d) => d.id === deployed.deployment_id);
      if (ours?.rolloutState === 'COMPLETED') endedAt = Date.now();
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await page.waitForFunction(() => window.shownAt !== null, null, { timeout: 30_000 });
    const shownAt = await page.evaluate(() => window.shownAt);
    samples.push(Math.max(0, shownAt - endedAt));
    await context.close();
  }
} finally {
  await browser.close();
}
const sorted = [...samples].sort((a, b) => a - b);
console.log(JSON.stringify({
  runs: samples.length,
  median_ms: sorted[Math.floor(sorted.length / 2)],
  max_ms: sorted[sorted.length - 1],
  samples_ms: samples,
}));
