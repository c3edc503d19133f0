'use strict';
/**
 * Issue 26, the demo (`npm start`, scripts/start.js) in a real browser: it opens on the
 * terminal example, and every example tab has a tidy layout once its flow has run: no node
 * cut off at the canvas edge, no node or status text (a debug node's counter or msg, a
 * poller's mark) over another node or status text.
 */
const assert = require('assert');
const { useEditor } = require('../helpers/browser');

describe('the demo in a real browser (issue 26)', function () {
  this.timeout(120000);
  let page;
  useEditor({ deployExamples: true, width: 1400, height: 900 }, (e) => (page = e.page));

  it('opens on the terminal example', async function () {
    const label = await page.evaluate(() => RED.nodes.workspace(RED.workspaces.active()).label);
    assert.match(label, /terminal mode/i);
  });

  it('every example tab: no node cut off at the canvas edge, nothing over anything else', async function () {
    // Let the demo run a while: debug nodes count, pollers show their marks.
    await page.waitForTimeout(8000);
    const tabs = await page.evaluate(() => {
      const out = [];
      RED.nodes.eachWorkspace((ws) => out.push({ id: ws.id, label: ws.label }));
      return out;
    });
    assert.ok(tabs.length >= 10, `the examples are deployed (${tabs.length} tabs)`);
    const problems = [];
    for (const t of tabs) {
      await page.evaluate((id) => RED.workspaces.show(id), t.id);
      await page.waitForTimeout(300);
      const boxes = await page.evaluate((z) => {
        // Canvas coordinates of each node's body and of its status text (when shown).
        const out = [];
        for (const n of RED.nodes.filterNodes({ z })) {
          const g = document.getElementById(n.id);
          if (!g) continue;
          const name = `${n.type} "${n.name || n.id}"`;
          // An inject node's button sticks out 25 px left of its body (a debug node's on the right).
          const left = n.type === 'inject' ? 25 : 0;
          const right = n.type === 'debug' ? 25 : 0;
          out.push({ name, kind: 'node', x0: n.x - n.w / 2 - left, y0: n.y - n.h / 2, x1: n.x + n.w / 2 + right, y1: n.y + n.h / 2 });
          const status = g.querySelector('.red-ui-flow-node-status-group');
          if (status && status.style.display !== 'none' && status.getAttribute('style') !== 'display: none;') {
            const label = status.querySelector('.red-ui-flow-node-status-label');
            if (label && label.textContent.trim()) {
              const b = status.getBBox();
              // The group is translated to (x - w/2 + 3, y + h/2 + 3) relative to the node.
              const x0 = n.x - n.w / 2 + 3 + b.x;
              const y0 = n.y + n.h / 2 + 3 + b.y;
              out.push({ name: `${name} status "${label.textContent.trim().slice(0, 30)}"`, kind: 'status', x0, y0, x1: x0 + b.width, y1: y0 + b.height });
            }
          }
        }
        return out;
      }, t.id);
      for (const b of boxes) if (b.x0 < 0 || b.y0 < 0) problems.push(`${t.label}: ${b.name} is cut off at the canvas edge (${Math.round(b.x0)}, ${Math.round(b.y0)})`);
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i];
          const b = boxes[j];
          if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) problems.push(`${t.label}: ${a.name} overlaps ${b.name}`);
        }
      }
    }
    assert.deepStrictEqual(problems, []);
  });
});
