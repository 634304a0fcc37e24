/** What generated encoders call: a growing scratch buffer and one writer per scalar kind. */
export interface Writer {
  /** Writes a one- or two-byte tag, or any tag. */
  b(b0: number): void;
  b2(b0: number, b1: number): void;
  tag(bytes: number[]): void;
  /** Opens a length-delimited body; returns where it starts. */
  open(): number;
  close(start: number): void;
  string(v: unknown): void;
  bool(v: unknown): void;
  double(v: unknown): void;
  float(v: unknown): void;
  int32(v: unknown): void;
  enum(v: unknown): void;
  uint32(v: unknown): void;
  sint32(v: unknown): void;
  fixed32(v: unknown): void;
  sfixed32(v: unknown): void;
  bytes(v: unknown): void;
}

/** What generated decoders call: the input and one reader per scalar kind. */
export interface Reader {
  more(end: number): boolean;
  /** Throws BAIL unless exactly at `end` (a field ran past its message). */
  end(end: number): void;
  tag(): number;
  /** Reads a length; returns where that body ends. */
  len(): number;
  string(): string;
  bool(): boolean;
  double(): number;
  float(): number;
  int32(): number;
  enum(): number;
  uint32(): number;
  sint32(): number;
  fixed32(): number;
  sfixed32(): number;
  bytes(): Uint8Array;
}
