// Validates Kubernetes manifests offline: every YAML document is built as
// its kind's kubernetes-models class (prometheus-operator's for
// monitoring.coreos.com) and checked against the schema with validate().
//   node validate.mjs FILE.yaml...
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  }
  return `kubernetes-models/${apiVersion}/${kind}`;
}

let failures = 0;
let checked = 0;
for (const file of process.argv.slice(2)) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  for (const [i, doc] of docs.entries()) {
    if (doc.errors.length > 0) {
      console.error(`FAIL ${file} document ${i}: YAML: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    const where = `${file} ${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    if (!obj.apiVersion || !obj.kind) {
      console.error(`FAIL ${where}: no apiVersion or kind`);
      failures++;
      continue;
    }
    let mod;
    try {
      mod = await import(modulePath(obj.apiVersion, obj.kind));
    } catch (e) {
      console.error(`FAIL ${where}: unknown apiVersion/kind ${obj.apiVersion} ${obj.kind}`);
      failures++;
      continue;
    }
    try {
      new mod[obj.kind](obj).validate();
      console.log(`ok   ${where}`);
      checked++;
    } catch (e) {
      console.error(`FAIL ${where}: ${e.message}`);
      failures++;
    }
  }
}
console.log(`${checked} document(s) valid, ${failures} failure(s)`);
process.exit(failures > 0 ? 1 : 0);
