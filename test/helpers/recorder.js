'use strict';
/**
 * A loopback HTTP server that records every request it receives (method, URL, headers and
 * body, as raw text) and answers with `reply(req, body)` (default: 401 with a short JSON
 * error). `hold()` makes it keep the next requests unanswered until `release()`: a test
 * that must still be running when the next one is posted. Used where what reaches a host
 * is the point (issue 34: no stored secret may reach a posted base URL).
 */
const http = require('node:http');

async function startRecorder({ reply } = {}) {
  const requests = [];
  const held = [];
  let holding = false;
  const answer = reply ?? ((_req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"who are you?"}'));
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (holding) held.push(() => answer(req, res, body));
      else answer(req, res, body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    /** Everything received, as one text (to look for secrets in). */
    text: () => JSON.stringify(requests),
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      held.splice(0).forEach((f) => f());
    },
    close() {
      this.release();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

module.exports = { startRecorder };
