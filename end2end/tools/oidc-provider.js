// A real OpenID Connect provider for the end-to-end tests (the `oidc-provider` package, with its
// development sign-in pages): any password signs in, and the accounts below carry the groups the
// repository's example policy knows.
//
//   node tools/oidc-provider.js <port> <console-url>
//
// It serves http://127.0.0.1:<port> and registers the confidential client `gpushare` (secret
// `gpushare-test-secret`) whose only redirect is <console-url>/auth/callback.

import Provider from 'oidc-provider';

const [port, consoleUrl] = process.argv.slice(2);
if (!port || !consoleUrl) {
  console.error('usage: node tools/oidc-provider.js <port> <console-url>');
  process.exit(2);
}

const GROUPS = {
  ana: ['ml-engineers', 'search-eng'],
  bo: ['ml-engineers', 'vision-eng'],
  root: ['platform-admins'],
};

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'gpushare',
      client_secret: 'gpushare-test-secret',
      redirect_uris: [`${consoleUrl}/auth/callback`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'groups'],
  // The scopes' claims go into the ID token itself.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  cookies: { keys: ['gpushare-end-to-end-only'] },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: `${id}@example.com`,
          email_verified: true,
          groups: GROUPS[id] ?? [],
        };
      },
    };
  },
});
// Plain HTTP on loopback: the development pages and cookies work without TLS.
provider.proxy = false;

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider serving ${issuer}`);
});
