// Random walks through the token sets of many schemas over the tiny checkpoint's real vocabulary
// (kipp-grammar-walk: at every step one allowed token, at random, half the time among the tokens
// that close something: noise with a bias towards ending). Every walk that ends (takes a stop
// token) must be JSON that ajv, the reference validator, accepts against the schema; the walker
// fails if a token set ever empties before the text is whole. Schemas Kipp refuses must be refused
// naming the keyword and where it sits. All of ours and all of JSONSchemaBench's, in both JSON
// forms, with the tidy form's count of JSONSchemaBench schemas that finish.
//
//   node random_walk_test.mjs KIPP_GRAMMAR_WALK MODEL OUR_SCHEMA_DIR JSONSCHEMABENCH_DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const Ajv = require('ajv').default;
const Ajv2019 = require('ajv/dist/2019').default;
const Ajv2020 = require('ajv/dist/2020').default;
const AjvDraft04 = require('ajv-draft-04').default;
const addFormats = require('ajv-formats').default;

const [walker, model, ourDir, benchDir] = process.argv.slice(2);
if (!benchDir) {
  console.error('usage: random_walk_test.mjs KIPP_GRAMMAR_WALK MODEL OUR_SCHEMA_DIR JSONSCHEMABENCH_DIR');
  process.exit(2);
}

// ajv-formats checks these as their RFCs define them.
const AJV_FORMATS_AS_SPECIFIED = ['date', 'time', 'date-time', 'duration', 'uuid', 'ipv4', 'ipv6', 'json-pointer',
  'relative-json-pointer'];
// Where ajv-formats refuses what the RFCs allow, it is not a reference: its email wants a dot in
// the domain ("a@localhost" is an RFC 5321 Mailbox) and its uri a non-empty part after the scheme
// ("f:" is an RFC 3986 URI). Kipp enforces these formats as the JSON-Schema-Test-Suite's format
// tests (JsonSchemaSuite.*) check them; here they are not checked again.
const AJV_FORMATS_STRICTER_THAN_SPECIFIED = ['email', 'uri', 'uri-reference', 'iri', 'iri-reference'];

// The validator for the draft a schema declares (2020-12 when it declares none).
function validatorFor(schema) {
  const declared = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : '';
  const options = { strict: false, allErrors: false, validateFormats: true };
  let ajv;
  if (declared.includes('draft-04')) ajv = new AjvDraft04(options);
  else if (declared.includes('draft-06') || declared.includes('draft-07')) {
    ajv = new Ajv(options);
    ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json'));
  } else if (declared.includes('2019-09')) ajv = new Ajv2019(options);
  else ajv = new Ajv2020(options);
  addFormats(ajv, { mode: 'full', formats: AJV_FORMATS_AS_SPECIFIED });
  for (const name of AJV_FORMATS_STRICTER_THAN_SPECIFIED) ajv.addFormat(name, true);
  return ajv.compile(schema);
}

// ajv compares numbers as doubles, so it cannot decide multipleOf for an integer past 2^53: a
// walk's -55816461559918459139480 is a multiple of 10, which ajv's float remainder denies. Such an
// error is decided here instead, exactly, on the number as written in the text.
function exactlyMultiples(errors, instance, text) {
  return errors.every((error) => {
    if (error.keyword !== 'multipleOf' || !Number.isInteger(error.params.multipleOf)) return false;
    const value = error.instancePath.split('/').slice(1)
      .reduce((at, key) => at?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], instance);
    if (!Number.isInteger(value) || Number.isSafeInteger(value)) return false;
    const written = (text.match(/-?\d+(?![\d.eE])/g) ?? []).filter((literal) => Number(literal) === value);
    return written.length > 0 && written.every((literal) => BigInt(literal) % BigInt(error.params.multipleOf) === 0n);
  });
}

function schemaFiles(dir) {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => join(dir, f));
}

const WALKS = 6;

// Both JSON forms (grammar/json_schema.h): every walk that ends is valid. The tidy form, which the
// server generates by default, must also finish: at least 95% of the JSONSchemaBench schemas it
// compiles have every walk end within 600 tokens (the goal; refusals aside). The exact
// form, whose language adds unlisted members and whitespace runs, finishes far fewer.
for (const form of ['tidy', 'exact']) {
  test(`random walks under each schema end in instances ajv accepts (${form} form)`, () => {
    const files = [...schemaFiles(ourDir), ...schemaFiles(benchDir)];
    assert.ok(files.length > 100, 'the schema folders are missing');
    const output = execFileSync(walker, ['--model', model, '--walks', String(WALKS), '--seed', '7', '--max-tokens', '600',
      '--json-form', form, '--json-schema', ...files], { encoding: 'utf8', maxBuffer: 1 << 28 });
    const tally = { schemas: files.length, refused: 0, walks: 0, finished: 0 };
    const bench = new Map();  // JSONSchemaBench schema -> whether every walk ended
    const validators = new Map();
    for (const line of output.split('\n').filter(Boolean)) {
      const walk = JSON.parse(line);
      if (walk.refused !== undefined) {
        assert.match(walk.refused, /keyword '[^']+' at \S*: /, `${walk.schema}: a refusal names the keyword`);
        tally.refused += 1;
        continue;
      }
      tally.walks += 1;
      if (walk.schema.startsWith(benchDir)) bench.set(walk.schema, (bench.get(walk.schema) ?? true) && walk.finished);
      if (!walk.finished) continue;
      tally.finished += 1;
      if (!validators.has(walk.schema)) validators.set(walk.schema, validatorFor(JSON.parse(readFileSync(walk.schema, 'utf8'))));
      const validate = validators.get(walk.schema);
      let instance;
      assert.doesNotThrow(() => { instance = JSON.parse(walk.text); }, `${walk.schema}: not JSON: ${walk.text}`);
      assert.ok(validate(instance) || exactlyMultiples(validate.errors, instance, walk.text),
        `${walk.schema}: ajv refuses ${walk.text}: ${JSON.stringify(validate.errors)}`);
    }
    assert.equal(tally.walks, (tally.schemas - tally.refused) * WALKS, 'one line per walk');
    const finishing = [...bench.values()].filter(Boolean).length;
    console.log(`random walks (${form} form): ${tally.schemas} schemas, ${tally.refused} refused, ${tally.walks} walks, ` +
                `${tally.finished} ended and ajv accepts every one; JSONSchemaBench: ${finishing} of the ${bench.size} ` +
                `schemas compiled finish every walk (${(100 * finishing / bench.size).toFixed(1)}%)`);
    if (form === 'tidy') assert.ok(finishing >= 0.95 * bench.size, 'the tidy form finishes on 95% of JSONSchemaBench');
    else assert.ok(tally.finished >= tally.walks / 2, 'most walks should end within 600 tokens');
  });
}
