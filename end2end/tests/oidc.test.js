// Sign-in with an OpenID Connect provider: a real provider (the `oidc-provider` package, started
// by scripts/test.sh from tools/oidc-provider.js) and a console with `--auth oidc` whose sessions
// last GPUSHARE_OIDC_SESSION_TTL seconds. A person signs in through the provider's pages, the
// header names them, the session cookie is HttpOnly and SameSite=Lax, signing out ends the
// session, and a session ends by itself when its time is up.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { launch, waitForHydration } from '../support/browser.js';

const OIDC_URL = process.env.GPUSHARE_OIDC_URL;
const PROVIDER_URL = process.env.GPUSHARE_OIDC_PROVIDER_URL;
const SESSION_TTL = Number(process.env.GPUSHARE_OIDC_SESSION_TTL ?? '20');

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

async function newPerson() {
  const context = await browser.newContext({ viewport: { width: 1366, height: 850 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, problems };
}

// Goes to `path` on the console; the console sends the browser to the provider, where `login`
// signs in (the development pages take any password) and agrees to share their details, and
// the provider sends the browser back to `path`.
async function signIn(page, login, path) {
  await page.goto(OIDC_URL + path);
  await page.waitForURL((url) => url.href.startsWith(PROVIDER_URL));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  // The first sign-in asks for consent; a later one may not.
  await page.waitForURL((url) => url.href.startsWith(OIDC_URL) || url.pathname.includes('/interaction/'));
  if (!page.url().startsWith(OIDC_URL)) {
    await page.locator('button[type="submit"]').click();
  }
  await page.waitForURL((url) => url.href.startsWith(OIDC_URL + path));
}

// What the console answers the person's browser for `path`: a page when asked for HTML.
async function status(page, path, accept = 'application/json') {
  const response = await page.request.get(OIDC_URL + path, { maxRedirects: 0, headers: { accept } });
  return response.status();
}

describe('sign-in with an OpenID Connect provider', { skip: !OIDC_URL && 'GPUSHARE_OIDC_URL is not set' }, () => {
  test('without a session the API says 401 and a page goes to the provider', async () => {
    const anonymous = await fetch(OIDC_URL + '/api/v1/services');
    assert.equal(anonymous.status, 401);
    const page = await fetch(OIDC_URL + '/deployments', { redirect: 'manual', headers: { accept: 'text/html' } });
    assert.equal(page.status, 303);
    assert.match(page.headers.get('location'), /^\/auth\/login\?next=%2Fdeployments$/);
  });

  test('a person signs in, is named in the header, and signs out', async () => {
    const ana = await newPerson();
    await signIn(ana.page, 'ana', '/deployments');
    await waitForHydration(ana.page);
    assert.match(await ana.page.getByTestId('identity').textContent(), /ana@example\.com \(deployer: search\)/);

    const cookies = await ana.context.cookies(OIDC_URL);
    const session = cookies.find((c) => c.name === 'gpushare_session');
    assert.ok(session, `a session cookie among ${cookies.map((c) => c.name).join(', ')}`);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Lax');
    assert.equal(await status(ana.page, '/api/v1/services'), 200, 'the session opens the API');

    await ana.page.getByTestId('sign-out').click();
    await ana.page.waitForURL(OIDC_URL + '/signed-out');
    assert.match(await ana.page.locator('main').textContent(), /signed out/i);
    assert.equal(await status(ana.page, '/api/v1/services'), 401, 'the session ended with sign-out');
    assert.deepEqual(ana.problems, []);
    await ana.context.close();
  });

  test('a session ends when its time is up', async () => {
    const bo = await newPerson();
    await signIn(bo.page, 'bo', '/');
    assert.equal(await status(bo.page, '/api/v1/services'), 200);
    // Counted from the session's own start: its cookie lasts the session's time from when the
    // console set it, at the end of the sign-in.
    const session = (await bo.context.cookies(OIDC_URL)).find((c) => c.name === 'gpushare_session');
    assert.ok(session && session.expires > 0, JSON.stringify(session));
    assert.ok(session.expires * 1000 - Date.now() <= SESSION_TTL * 1000, 'the cookie lasts no longer than the session');
    const withCookie = () => fetch(OIDC_URL + '/api/v1/services', { headers: { cookie: `gpushare_session=${session.value}` } });
    assert.equal((await withCookie()).status, 200, 'the session opens the API');
    await new Promise((resolve) => setTimeout(resolve, Math.max(session.expires * 1000 + 1500 - Date.now(), 0)));
    // The console itself refuses the session once its time is up, cookie or not.
    assert.equal((await withCookie()).status, 401, 'the session has expired');
    assert.equal(await status(bo.page, '/api/v1/services'), 401, 'the browser has no session either');
    // A page sends the person back to sign in.
    assert.equal(await status(bo.page, '/deployments', 'text/html'), 303);
    await bo.context.close();
  });
});
