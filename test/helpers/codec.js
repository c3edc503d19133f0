'use strict';
/** The codec's definitions for tests: the hand-made fixtures of test/fixtures/codec and the users' example file. */
const fs = require('node:fs');
const path = require('node:path');
const { loadDefinitions } = require('../../dist/lib/codec');

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'codec');
const DEMO_FILE = path.join(__dirname, '..', '..', 'examples', 'definitions', 'demo.idpmsg');

const fixtureText = (name) => fs.readFileSync(path.join(FIXTURES, name), 'utf8');
const demoText = () => fs.readFileSync(DEMO_FILE, 'utf8');
const load = (text, source = 'test') => loadDefinitions([{ text, source }]);
const hex = (s) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** Runs `fn` and returns the GatewayError it throws (fails if it does not throw one). */
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
}

module.exports = { FIXTURES, DEMO_FILE, fixtureText, demoText, load, hex, thrown };

/** An iotgw-definitions config node (id "defs") with pasted XML (the example file by default). */
function definitionsNode(props = {}) {
  return { id: 'defs', type: 'iotgw-definitions', name: '', xml: demoText(), file: '', ...props };
}
module.exports.definitionsNode = definitionsNode;
