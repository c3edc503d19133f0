'use strict';
/**
 * Issue 5: the other half of the node types against every fault kind (see faults.test.js; two
 * files so that two workers share the work).
 */
const { useFaultSim, faultKindsTests } = require('../helpers/faults');

describe('reliability: injected faults, per node type (second half)', function () {
  this.timeout(60000);
  const state = useFaultSim();
  faultKindsTests(state, 1);
});
