/**
 * The model of a Message Definition File (shared/spec/message-definitions.md), as
 * src/lib/codec/definitions.ts reads it from the XML: services, their messages per
 * direction, and each message's fields in bit order.
 */
export const FIELD_KINDS = [
  'BooleanField',
  'EnumField',
  'UnsignedIntField',
  'SignedIntField',
  'StringField',
  'DataField',
  'ArrayField',
  'BitmaskListField',
  'DynamicField',
  'PropertyField',
  'MessageField',
] as const;
export type FieldKind = (typeof FIELD_KINDS)[number];

/** Kinds named in files that the public tools leave unimplemented: refused on use. */
export const UNSUPPORTED_KINDS: readonly FieldKind[] = ['PropertyField', 'MessageField'];

export interface FieldDef {
  name: string;
  kind: FieldKind;
  optional: boolean;
  /** Bits (ints, enum, bitmask), most bytes (string, data) or most elements (array). */
  size: number;
  fixed: boolean;
  /** The Default element's text, checked against the kind at load. */
  default?: string;
  /** Enum / bitmask item texts, by index (a missing index: no text). */
  items: string[];
  /** Element fields (array, bitmask list). */
  fields: FieldDef[];
  /** Where it was defined, for error texts. */
  line: number;
}

export type Direction = 'forward' | 'return';

export interface MessageDef {
  name: string;
  sin: number;
  min: number;
  direction: Direction;
  service: string;
  fields: FieldDef[];
  line: number;
}

export interface ServiceDef {
  name: string;
  sin: number;
  forward: MessageDef[];
  return: MessageDef[];
  line: number;
  /** The file it came from ("pasted XML" or a path). */
  source: string;
}
