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

/** The values of decoded fields, as the codec's bound counts them: each value, array element and bitmask item object. */
function countValues(v) {
  if (Array.isArray(v)) return v.reduce((n, e) => n + 1 + countValues(e), 0);
  if (v && typeof v === 'object' && !Buffer.isBuffer(v)) return Object.values(v).reduce((n, e) => n + 1 + countValues(e), 0);
  return 0;
}

/** One <Field> of a definitions file. */
const fieldXml = (type, name, extra = '') => `<Field xsi:type="${type}"><Name>${name}</Name>${extra}</Field>`;
/** A definitions file of one service (SIN `sin`) with one message (MIN `min`) of `fields` (XML), return or forward. */
const messageFile = (fields, { sin = 200, min = 1, name = 'M', forward = false } = {}) => {
  const list = forward ? 'ForwardMessages' : 'ReturnMessages';
  return `<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services><Service><Name>s</Name><SIN>${sin}</SIN><${list}><Message><Name>${name}</Name><MIN>${min}</MIN><Fields>${fields}</Fields></Message></${list}></Service></Services></MessageDefinition>`;
};
/** The issue's layout: two nested variable arrays of booleans, each of Size `size`. */
const nestedBooleans = (size = 32767) => fieldXml('ArrayField', 'outer', `<Size>${size}</Size><Fields>${fieldXml('ArrayField', 'inner', `<Size>${size}</Size><Fields>${fieldXml('BooleanField', 'b')}</Fields>`)}</Fields>`);

module.exports = { FIXTURES, DEMO_FILE, fixtureText, demoText, load, hex, thrown, countValues, fieldXml, messageFile, nestedBooleans };

/** An iotgw-definitions config node (id "defs") with pasted XML (the example file by default). */
function definitionsNode(props = {}) {
  return { id: 'defs', type: 'iotgw-definitions', name: '', xml: demoText(), file: '', ...props };
}
module.exports.definitionsNode = definitionsNode;
