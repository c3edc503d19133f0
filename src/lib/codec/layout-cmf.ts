/**
 * The common message format of decoded fields (src/lib/api/cmf), compiled per message like
 * its decoder (layout.ts): one closure per field with its Name and Type fixed, so a large
 * decoded message turns into `Fields` at the speed it was decoded (the generic
 * cmf.encodeFields infers and checks every value; decoded values need neither). The
 * result is the one cmf.encodeFields gives with the message's spec.
 */
import { encodeFields, type CmfElement, type CmfField } from '../api/cmf';
import type { Fields } from './layout-common';
import type { FieldDef } from './model';

type ToField = (v: unknown) => CmfField;
/** Decoded fields -> CMF `Fields`, in the definition's order. */
export type ToFields = (obj: Fields) => CmfField[];

const has = Object.prototype.hasOwnProperty;

function scalar(name: string, f: FieldDef): ToField {
  switch (f.kind) {
    case 'BooleanField':
      return (v) => ({ Name: name, Type: 'boolean', Value: v ? 'True' : 'False' });
    case 'EnumField':
      return (v) => ({ Name: name, Type: 'enum', Value: String(v) });
    case 'UnsignedIntField':
      return (v) => ({ Name: name, Type: 'unsignedint', Value: String(v) });
    case 'SignedIntField':
      return (v) => ({ Name: name, Type: 'signedint', Value: String(v) });
    case 'StringField':
      return (v) => ({ Name: name, Type: 'string', Value: String(v) });
    case 'DataField':
      return (v) => ({ Name: name, Type: 'data', Value: (v as Buffer).toString('base64') });
    default:
      // DynamicField: the type follows the value, as cmf infers it.
      return (v) => encodeFields({ [name]: v }, undefined, name, [])[0]!;
  }
}

function toField(f: FieldDef): ToField {
  const name = f.name;
  if (f.kind === 'ArrayField') {
    const el = toFields(f.fields);
    return (v) => {
      const list = v as Fields[];
      const elements: CmfElement[] = new Array(list.length);
      for (let i = 0; i < list.length; i++) elements[i] = { Index: i, Fields: el(list[i]!) };
      return { Name: name, Type: 'array', Elements: elements };
    };
  }
  if (f.kind === 'BitmaskListField') {
    const el = toFields(f.fields);
    return (v) => {
      const items: CmfField[] = [];
      for (const k of Object.keys(v as Fields)) items.push({ Name: k, Type: 'message', Message: { Fields: el((v as Record<string, Fields>)[k]!) } });
      return { Name: name, Type: 'message', Message: { Fields: items } };
    };
  }
  return scalar(name, f);
}

/** Compiles the CMF writer of a list of fields (a message's, an element's). */
export function toFields(fields: FieldDef[]): ToFields {
  const names = fields.map((f) => f.name);
  const conv = fields.map(toField);
  return (obj) => {
    const out: CmfField[] = [];
    for (let i = 0; i < names.length; i++) {
      const k = names[i]!;
      if (has.call(obj, k)) out.push(conv[i]!(obj[k]));
    }
    return out;
  };
}
