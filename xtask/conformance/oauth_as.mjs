// The authorization server of `cargo xtask conformance`'s interop rows:
// `oauth2-mock-server` (npm, pinned in xtask/src/conformance/setup.rs),
// started through its library API on 127.0.0.1 only.
//
//   node oauth_as.mjs <node_modules folder> <port>
//
// What this script adds to the package, and why:
//
// * The issuer is named http://127.0.0.1:PORT (the package names it
//   http://localhost:PORT when bound to a 127.x address); the server listens
//   on 127.0.0.1 and nowhere else.
// * Resource indicators (RFC 8707), which MCP clients must send and the
//   package ignores: an access token that names no audience gets the
//   `resource` of its token request as `aud`, through the package's
//   documented `beforeTokenSigning` hook. A client that sends no `resource`
//   gets a token without `aud`, which the resource server refuses. ID tokens
//   already name the client as their audience and are left alone.
// * The scope of an authorization code grant: RFC 6749 §4.1.3 has no
//   `scope` in the token request, and the token carries the scope that was
//   authorized; the package takes the token request's `scope` instead, and
//   without one issues the scope "dummy". A client that follows the RFC
//   (ours) then gets a token the resource server refuses for lack of scope,
//   asks again for more, and gives up after a few rounds. So the scope of
//   the authorization request is remembered with its code and issued for it
//   (in the token and in the token response), when the token request names
//   none.
// * GET /xtask/requests: what the authorization and token requests carried
//   (parameter names, the PKCE method, the resource; never a code, verifier
//   or token), so that the rows can say what the client sent.
//
// Everything else (discovery, keys, the authorization endpoint's immediate
// redirect, PKCE verification, the grants) is the package's own behaviour.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, portText] = process.argv.slice(2);
const port = Number.parseInt(portText ?? "", 10);
if (!nodeModules || !Number.isInteger(port) || port <= 0) {
  console.error("usage: node oauth_as.mjs <node_modules> <port>");
  process.exit(2);
}

const entry = join(nodeModules, "oauth2-mock-server", "dist", "index.mjs");
const { OAuth2Server } = await import(pathToFileURL(entry).href);

const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
server.issuer.url = `http://127.0.0.1:${port}`;

const seen = { authorize: [], token: [] };
// code -> the scope its authorization request asked for.
const authorized = new Map();

server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const query = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
  const code = redirect.url.searchParams.get("code");
  if (code !== null && query.get("scope") !== null) {
    authorized.set(code, query.get("scope"));
  }
  seen.authorize.push({
    params: [...new Set(query.keys())].sort(),
    response_type: query.get("response_type"),
    code_challenge_method: query.get("code_challenge_method"),
    resource: query.get("resource"),
    scope: query.get("scope"),
  });
});

// The scope authorized for this token request's code, when the request
/// names none.
function authorizedScope(body) {
  if (body.grant_type !== "authorization_code" || body.scope !== undefined) {
    return undefined;
  }
  return authorized.get(body.code);
}

server.service.on("beforeTokenSigning", (token, req) => {
  const body = req.body ?? {};
  // An access token names no audience; an ID token names the client.
  if (token.payload.aud !== undefined) {
    return;
  }
  const scope = authorizedScope(body);
  if (scope !== undefined) {
    token.payload.scope = scope;
  }
  if (typeof body.resource === "string") {
    token.payload.aud = body.resource;
  }
});

server.service.on("beforeResponse", (response, req) => {
  const body = req.body ?? {};
  const scope = authorizedScope(body);
  if (scope !== undefined) {
    response.body.scope = scope;
    authorized.delete(body.code);
  }
  seen.token.push({
    params: Object.keys(body).sort(),
    grant_type: body.grant_type,
    resource: body.resource,
    scope: body.scope,
    basic_auth: (req.headers.authorization ?? "").startsWith("Basic "),
    status: response.statusCode,
  });
});

server.service.addRoute("GET", "/xtask/requests", (_req, res) => {
  const text = JSON.stringify(seen);
  res.statusCode = 200;
  res.setHeader("Content-Type", "application/json");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
});

await server.start(port, "127.0.0.1");
const address = server.address();
console.log(
  `oauth2-mock-server listening on ${address.address}:${address.port}, issuer ${server.issuer.url}`,
);

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, () => {
    server.stop().finally(() => process.exit(0));
  });
}
