'use strict';
/**
 * The editor tour, part 4 (test/helpers/editor.js): the terminal examples (exampleArea
 * `terminals`, with a real redis-server for the shared-account one) imported from
 * Import > Examples, deployed and producing output (docs/images/example-running.png and
 * codec-debug.png with IOTGW_SCREENSHOTS=1).
 */
const { describeEditor, exampleTests } = require('../helpers/editor');

describeEditor('editor in a real browser (Chromium): examples of the terminals side', (ed) => {
  exampleTests(ed, 'terminals');
}, { clock: true });
