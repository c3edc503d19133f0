'use strict';
/**
 * The editor tour, part 5 (test/helpers/editor.js): every example is listed under
 * Import > Examples, and the LoRaWAN, SMS and application examples (exampleArea
 * `lorawan-sms-app`) import, deploy and produce output.
 */
const { describeEditor, exampleTests } = require('../helpers/editor');

describeEditor('editor in a real browser (Chromium): examples of the LoRaWAN, SMS and app nodes', (ed) => {
  exampleTests(ed, 'lorawan-sms-app', { listed: true });
}, { clock: true });
