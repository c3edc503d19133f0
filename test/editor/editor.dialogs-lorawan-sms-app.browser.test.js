'use strict';
/**
 * The editor tour, part 3 (test/helpers/editor.js): the edit dialogs of the LoRaWAN, SMS and
 * application nodes (typeArea `lorawan-sms-app`; docs/images/dialog-<type>.png with
 * IOTGW_SCREENSHOTS=1).
 */
const { nodeTypes } = require('../helpers/browser');
const { describeEditor, dialogTests, typeArea } = require('../helpers/editor');

describeEditor('editor in a real browser (Chromium): dialogs of the LoRaWAN, SMS and app nodes', (ed) => {
  dialogTests(ed, nodeTypes().filter((t) => typeArea(t) === 'lorawan-sms-app'));
}, { clock: true });
