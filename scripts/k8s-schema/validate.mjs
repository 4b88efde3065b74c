// Validates Kubernetes objects against the upstream API schemas: the JSON
// schemas that kubernetes-models (npm, pinned in package-lock.json) generates
// from Kubernetes' OpenAPI spec, checked by ajv. scripts/check_k8s.py feeds it
// the output of `kubectl kustomize`, as JSON on stdin:
//   [{"where": "deploy/k8s/base", "object": {...}}, ...]
// and it prints one line per problem (an object of a kind it has no schema
// for is one). Exit 0 when every object is valid, 1 otherwise, 2 on bad input.
// Install its dependencies with `npm ci --prefix scripts/k8s-schema`
// (scripts/install-deps.sh does).
import { readFileSync } from "node:fs";

let items;
try {
  items = JSON.parse(readFileSync(0, "utf8"));
} catch (e) {
  console.log(`validate.mjs: stdin is not JSON: ${e.message}`);
  process.exit(2);
}

let problems = 0;
for (const { where, object } of items) {
  const apiVersion = String(object?.apiVersion ?? "");
  const kind = String(object?.kind ?? "");
  const name = object?.metadata?.name ?? "?";
  const at = `${where}: ${kind || "?"} ${name}`;
  // "v1" is the core group; "apps/v1" is group apps, version v1.
  if (!/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) {
    console.log(`${at}: apiVersion '${apiVersion}' / kind '${kind}' is not a Kubernetes type`);
    problems++;
    continue;
  }
  let Model;
  try {
    Model = (await import(`kubernetes-models/${apiVersion}/${kind}`))[kind];
  } catch (e) {
    Model = undefined;
  }
  if (!Model) {
    console.log(`${at}: no upstream schema for ${apiVersion} ${kind}`);
    problems++;
    continue;
  }
  try {
    new Model(object).validate();
  } catch (e) {
    console.log(`${at}: ${e.message}`);
    problems++;
  }
}
process.exit(problems ? 1 : 0);
