import { launch, openPage, waitForHydration } from './support/browser.js';
const BASE = 'http://127.0.0.1:3000';
const browser = await launch();
const { context, page, problems } = await openPage(browser);
const api = async (p, init) => { const r = await fetch(BASE + p, init); return { status: r.status, body: await r.json() }; };
// A rollout to watch: one more variable on ocr.
const src = (await api('/api/v1/task-definitions/ocr/1')).body.task_definition;
src.containerDefinitions[0].environment = [...(src.containerDefinitions[0].environment ?? []), { name: 'RELEASE', value: 'shot' }];
const reg = await api('/api/v1/task-definitions/ocr/1/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ task_definition: src }) });
const rev = reg.body.registered.revision;
const dep = await api('/api/v1/services/inference-prod/ocr/deploy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ revision: rev, expected_revision: 1 }) });
console.log('deploy', dep.status);
const shots = [
  ['deployments', '/deployments'],
  ['service', '/deployments/inference-prod/ocr'],
  ['watch', `/rollouts/${dep.body.audit_id}`],
  ['events', '/clusters/inference-prod/events'],
  ['events-problems', '/clusters/inference-prod/events?kind=deployment&service=ocr'],
  ['events-bad', '/clusters/inference-prod/events?since=forever'],
  ['stopped', '/clusters/inference-prod/stopped-tasks'],
  ['audit', '/audit'],
];
await new Promise((r) => setTimeout(r, 8000));
for (const [name, path] of shots) {
  const res = await page.goto(BASE + path);
  await waitForHydration(page);
  await page.waitForTimeout(800);
  await page.screenshot({ path: `/tmp/shots/${name}.png`, fullPage: false });
  console.log(name, res.status());
}
console.log(problems);
await browser.close();
