'use strict';
/** Reading Message Definition Files: what is refused (naming file, line and element), hostile XML, size. */
const assert = require('node:assert/strict');
const { loadDefinitions } = require('../../../dist/lib/codec');
const { fixtureText, demoText, load, thrown } = require('../../helpers/codec');

const file = (services) => `<?xml version="1.0"?>\n<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n<Services>\n${services}\n</Services>\n</MessageDefinition>`;
const service = (sin, ret, name = `s${sin}`) => `<Service><Name>${name}</Name><SIN>${sin}</SIN><ReturnMessages>${ret}</ReturnMessages></Service>`;
const message = (min, fields, name = `m${min}`) => `<Message><Name>${name}</Name><MIN>${min}</MIN><Fields>${fields}</Fields></Message>`;
const field = (type, name, extra = '') => `<Field xsi:type="${type}"><Name>${name}</Name>${extra}</Field>`;

function refused(text, pattern) {
  const e = thrown(() => load(text, 'my.idpmsg'));
  assert.equal(e.code, 'BAD_INPUT', e.stack);
  assert.match(e.message, pattern);
  return e;
}

describe('codec: definitions files', function () {
  it('reads the fixtures and the example: services, messages per direction, fields', function () {
    assert.deepEqual(load(demoText()).summary(), { services: 1, forward: 1, return: 1, fields: 14 });
    // Kinds 8, Big 4, Lists 3 + 2 + 1 + 1, Options 5, Unsupported 2; Defaults 4, Long 1, Empty 0
    assert.deepEqual(load(fixtureText('all-kinds.idpmsg')).summary(), { services: 1, forward: 3, return: 5, fields: 31 });
  });

  it('refuses a bad file at load, naming the file, the line and the element', function () {
    refused(file(service(1, message(1, field('UnsignedIntField', 'a', '<Size>65</Size>')))), /^my\.idpmsg, line 4: Service "s1" \(SIN 1\) > ReturnMessages > Message "m1" \(MIN 1\) > Field "a": <Size> must be a whole number from 1 to 64, not "65"/);
    refused(file(service(1, message(1, field('FloatField', 'a')))), /Field "a": unknown field kind xsi:type="FloatField"/);
    refused(file(service(1, message(1, field('EnumField', 'e', '<Size>1</Size><Items><string>a</string><string>b</string><string>c</string></Items>')))), /3 items do not fit in 1 bits/);
    refused(file(service(1, message(1, field('BooleanField', 'a') + field('BooleanField', 'a')))), /two fields are named "a"/);
    refused(file(service(1, message(1, '') + message(1, ''))), /Message "m1": MIN 1 is already defined/);
    refused(file(service(1, '') + '\n' + service(1, '', 'other')), /line 5: Service "other": SIN 1 is already defined by service "s1"/);
    refused(file(service(256, '')), /<SIN> must be a whole number from 0 to 255/);
    refused(file(service(1, message(1, field('UnsignedIntField', 'a', '<Size>4</Size><Default>16</Default>')))), /<Default> 16 does not fit in 4 bits/);
    refused(file(service(1, message(1, field('ArrayField', 'a', '<Size>4</Size><Fields></Fields>')))), /elements of an array must take at least one bit/);
    refused(file(service(1, message(1, '<Field><Name>x</Name></Field>'))), /xsi:type attribute/);
    refused(file(service(1, message(1, field('StringField', '__proto__', '<Size>4</Size>')))), /"__proto__" cannot be a name/);
    refused('<Definitions/>', /root element must be <MessageDefinition>/);
    // Two files with the same SIN: the second is named.
    const e = thrown(() => loadDefinitions([{ text: file(service(7, '')), source: 'a.idpmsg' }, { text: file(service(7, '')), source: 'b.idpmsg' }]));
    assert.match(e.message, /^b\.idpmsg, line 4: .*a\.idpmsg, line 4/);
  });

  it('refuses XML that is not well formed, with the line where the parser stopped', function () {
    refused('<MessageDefinition>\n<Services>\n<Service>\n</Services>\n</MessageDefinition>', /^my\.idpmsg, line 4: not well-formed XML/);
    refused('', /not well-formed XML|no root/);
  });

  it('refuses a DOCTYPE, external entities and entity expansion (billion laughs), at once', function () {
    const bomb = `<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`).join('')}]>\n<MessageDefinition><Services><Service><Name>&lol9;</Name><SIN>1</SIN></Service></Services></MessageDefinition>`;
    const t = Date.now();
    refused(bomb, /DOCTYPE is not allowed/);
    assert.ok(Date.now() - t < 500);
    refused('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY ext SYSTEM "file:///etc/passwd">]>\n<MessageDefinition>&ext;</MessageDefinition>', /DOCTYPE is not allowed/);
    // Without a DOCTYPE no entity can be declared: anything but the five of XML is refused.
    refused(file(service(1, '')).replace('<Name>s1</Name>', '<Name>&ext;</Name>'), /undefined entity|entity/i);
    // The five built-in ones and character references are fine.
    const d = load(file(service(1, message(1, '', 'a&amp;b&#x41;'))));
    assert.equal(d.find(1, 1, 'return').def.name, 'a&bA');
  });

  it('a file of 10,000 messages loads in under a second', function () {
    const services = [];
    for (let sin = 0; sin < 40; sin++) {
      const msgs = [];
      for (let min = 0; min < 250; min++) msgs.push(message(min, field('UnsignedIntField', 'a', '<Size>12</Size>') + field('SignedIntField', 'b', '<Size>20</Size>') + field('StringField', 'c', '<Size>20</Size>') + field('EnumField', 'd', '<Size>2</Size><Items><string>x</string><string>y</string></Items>')));
      services.push(service(sin, msgs.join('')));
    }
    const text = file(services.join('\n'));
    const t = process.hrtime.bigint();
    const d = load(text);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    assert.equal(d.summary().return, 10000);
    assert.ok(ms < 1000, `${ms.toFixed(0)} ms`);
    assert.deepEqual(d.decode(Buffer.from([39, 249, 0x00, 0x10, 0x00, 0x01, 0x00, 0x00]), 'return').fields, { a: 1, b: 1, c: '', d: 'x' });
  });
});
