// WCAG 2 A and AA checks of a page with axe-core, run in the page through the browser's
// debugging protocol (so the console's Content-Security-Policy, which allows no inline script,
// stays as it is).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let source;

/// The page's WCAG 2 A/AA violations, each as `rule: what (n elements, e.g. selector)`.
export async function accessibilityViolations(page) {
  source ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      help: v.help,
      count: v.nodes.length,
      example: v.nodes[0]?.target?.join(' '),
    }));
  });
  return violations.map((v) => `${v.id}: ${v.help} (${v.count} elements, e.g. ${v.example})`);
}
