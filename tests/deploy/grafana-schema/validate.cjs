// Validates Grafana dashboard JSON files against the Dashboard JSON schema
// generated from @grafana/schema, then checks what the schema cannot express.
//
//   node validate.cjs SCHEMA.json DASHBOARD.json...
//
// ajv comes from NODE_PATH (the npm tree that grafana_schema_test.sh installs).
// Prints one line per problem ("FILE: PATH: message") and exits 1 on any.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const MIN_SCHEMA_VERSION = 36;
const UNITS_OPTIONAL = new Set(['row', 'text', 'news', 'dashlist', 'alertlist']);

const [schemaFile, ...files] = process.argv.slice(2);
if (!schemaFile || files.length === 0) {
  console.error('usage: node validate.cjs SCHEMA.json DASHBOARD.json...');
  process.exit(2);
}
const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const validate = ajv.compile(schema);

let problems = 0;
function problem(file, where, msg) {
  problems++;
  console.log(`${path.basename(file)}: ${where || '/'}: ${msg}`);
}

// Every panel, with its JSON pointer; rows' nested (collapsed) panels included.
function allPanels(dash) {
  const out = [];
  (dash.panels || []).forEach((p, i) => {
    out.push([p, `/panels/${i}`]);
    (p.panels || []).forEach((q, j) => out.push([q, `/panels/${i}/panels/${j}`]));
  });
  return out;
}

// "$name", "${name}", "${name:fmt}" and "[[name]]" references to template variables.
function varRefs(text) {
  const refs = [];
  const re = /\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)\]\]/g;
  let m;
  while ((m = re.exec(text)) !== null) refs.push(m[1] || m[2] || m[3]);
  return refs.filter((r) => !r.startsWith('__'));
}

// The value at a JSON pointer of doc.
function at(doc, pointer) {
  return pointer.split('/').slice(1).reduce(
      (v, k) => (v == null ? undefined : v[k.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
}

// A panel is "Panel | RowPanel" (anyOf), so ajv reports the failures of both
// branches: keep those of the branch the panel's type selects, once each.
const defs = schema.definitions || {};
const rowTypeSchema = ((defs.RowPanel || {}).properties || {}).type;
function relevantErrors(dash, errors) {
  const seen = new Set();
  return errors.filter((e) => {
    const m = /^(.*\/panels\/\d+)(\/type)?$/.exec(e.instancePath);
    if (m) {
      const p = at(dash, m[1]);
      const isRow = Boolean(p && p.type === 'row');
      if (!m[2] && e.keyword === 'anyOf') return false;
      if (e.parentSchema === defs.RowPanel || e.parentSchema === rowTypeSchema) {
        if (!isRow) return false;
      } else if (e.parentSchema === defs.Panel && isRow) {
        return false;
      }
    }
    const key = `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

// Every link URL of a dashboard (dashboard links, panel links, data links of
// field defaults and overrides), with its JSON pointer.
function linkUrls(dash) {
  const out = [];
  const add = (links, where) => (links || []).forEach((l, i) => {
    if (l && typeof l.url === 'string') out.push([l.url, `${where}/${i}/url`]);
  });
  add(dash.links, '/links');
  for (const [p, where] of allPanels(dash)) {
    add(p.links, `${where}/links`);
    const fc = p.fieldConfig || {};
    add((fc.defaults || {}).links, `${where}/fieldConfig/defaults/links`);
    (fc.overrides || []).forEach((o, i) => (o.properties || []).forEach((prop, j) => {
      if (prop.id === 'links') add(prop.value, `${where}/fieldConfig/overrides/${i}/properties/${j}/value`);
    }));
  }
  return out;
}

const uids = new Map();
const varsByUid = new Map();
const links = [];
for (const file of files) {
  let dash;
  try {
    dash = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    problem(file, '', `not JSON: ${e.message}`);
    continue;
  }
  if (!validate(dash)) {
    for (const e of relevantErrors(dash, validate.errors)) {
      const extra = e.params && e.params.additionalProperty ? ` '${e.params.additionalProperty}'` :
                    e.params && e.params.allowedValues ? ` ${JSON.stringify(e.params.allowedValues)}` : '';
      problem(file, e.instancePath, `${e.message}${extra}`);
    }
  }

  if (typeof dash.schemaVersion !== 'number' || dash.schemaVersion < MIN_SCHEMA_VERSION) {
    problem(file, '/schemaVersion', `must be a number >= ${MIN_SCHEMA_VERSION}, is ${dash.schemaVersion}`);
  }
  if (!dash.uid) {
    problem(file, '/uid', 'missing (provisioned dashboards need a stable uid)');
  } else if (uids.has(dash.uid)) {
    problem(file, '/uid', `'${dash.uid}' also used by ${uids.get(dash.uid)}`);
  } else {
    uids.set(dash.uid, path.basename(file));
  }

  // Template variables: one datasource variable of the Prometheus type; every
  // $reference names a defined variable.
  const vars = ((dash.templating || {}).list || []);
  const varNames = new Set(vars.map((v) => v.name));
  if (dash.uid) varsByUid.set(dash.uid, varNames);
  for (const [url, where] of linkUrls(dash)) links.push([file, where, url]);
  const dsVars = vars.filter((v) => v.type === 'datasource');
  if (dsVars.length !== 1 || dsVars[0].query !== 'prometheus') {
    problem(file, '/templating/list', 'needs exactly one variable of type datasource with query "prometheus"');
  }
  const dsVar = dsVars.length ? dsVars[0].name : 'datasource';
  const wantUid = `\${${dsVar}}`;
  function checkDs(ref, where) {
    if (!ref || ref.type !== 'prometheus' || ref.uid !== wantUid) {
      problem(file, where, `datasource must be {"type": "prometheus", "uid": "${wantUid}"}, is ${JSON.stringify(ref)}`);
    }
  }
  vars.forEach((v, i) => {
    if (v.type === 'query') checkDs(v.datasource, `/templating/list/${i}/datasource`);
    const q = typeof v.query === 'string' ? v.query : JSON.stringify(v.query || '');
    for (const r of varRefs(q)) {
      if (!varNames.has(r)) problem(file, `/templating/list/${i}/query`, `unknown variable $${r}`);
    }
  });

  // Panels: unique ids, a grid position, no overlap, datasource, units, targets.
  const ids = new Map();
  const cells = new Map();
  for (const [p, where] of allPanels(dash)) {
    if (typeof p.id !== 'number') {
      problem(file, where, 'panel without a numeric id');
    } else if (ids.has(p.id)) {
      problem(file, `${where}/id`, `duplicate panel id ${p.id} (also ${ids.get(p.id)})`);
    } else {
      ids.set(p.id, where);
    }
    const g = p.gridPos;
    if (!g || [g.x, g.y, g.w, g.h].some((n) => typeof n !== 'number')) {
      problem(file, where, `panel ${p.id} has no complete gridPos`);
    } else {
      if (g.x < 0 || g.w < 1 || g.x + g.w > 24) problem(file, `${where}/gridPos`, 'outside the 24-column grid');
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          const key = `${x},${y}`;
          if (cells.has(key)) {
            problem(file, `${where}/gridPos`, `panel ${p.id} overlaps panel ${cells.get(key)} at x=${x} y=${y}`);
            x = g.x + g.w; // one report per pair is enough
            break;
          }
          cells.set(key, p.id);
        }
      }
    }
    if (p.type === 'row') {
      for (const r of varRefs(`${p.title || ''} ${p.repeat ? '$' + p.repeat : ''}`)) {
        if (!varNames.has(r)) problem(file, where, `unknown variable $${r}`);
      }
      continue;
    }
    if (!p.title) problem(file, where, `panel ${p.id} has no title`);
    checkDs(p.datasource, `${where}/datasource`);
    const unit = ((p.fieldConfig || {}).defaults || {}).unit;
    if (!UNITS_OPTIONAL.has(p.type) && !unit) problem(file, `${where}/fieldConfig/defaults/unit`, `panel ${p.id} has no unit`);
    const targets = p.targets || [];
    if (targets.length === 0) problem(file, where, `panel ${p.id} has no targets`);
    const refIds = new Set();
    targets.forEach((t, i) => {
      const tw = `${where}/targets/${i}`;
      checkDs(t.datasource, `${tw}/datasource`);
      if (typeof t.expr !== 'string' || t.expr.trim() === '') problem(file, tw, 'target without expr');
      if (refIds.has(t.refId)) problem(file, `${tw}/refId`, `duplicate refId ${t.refId}`);
      refIds.add(t.refId);
      for (const r of varRefs(`${t.expr || ''} ${t.legendFormat || ''}`)) {
        if (!varNames.has(r)) problem(file, `${tw}/expr`, `unknown variable $${r}`);
      }
    });
    for (const r of varRefs(p.title || '')) {
      if (!varNames.has(r)) problem(file, `${where}/title`, `unknown variable $${r}`);
    }
  }
  console.log(`${path.basename(file)}: schemaVersion ${dash.schemaVersion}, ${ids.size} panels, ${vars.length} variables`);
}
// A link to one of these dashboards (/d/UID/...) sets only variables it has (var-NAME=).
for (const [file, where, url] of links) {
  const m = /\/d\/([^/?#]+)/.exec(url);
  if (!m || !varsByUid.has(m[1])) continue;
  for (const v of url.matchAll(/[?&]var-([\w]+)=/g)) {
    if (!varsByUid.get(m[1]).has(v[1])) problem(file, where, `link sets var-${v[1]}, which dashboard ${m[1]} does not have`);
  }
}
if (problems) {
  console.log(`${problems} problem(s)`);
  process.exit(1);
}
