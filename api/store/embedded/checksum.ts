import { crc32c } from '@node-rs/crc32';

/**
 * Record checksums. Every journal entry and snapshot line written from journal format 2 and
 * snapshot format 4 on is `<CRC-32C of the rest, 8 lowercase hex digits> <the rest>\n`: a line an
 * older format wrote starts with `{`, `"` or `[`, never a hex digit, so a reader tells them apart
 * by the first byte. CRC-32C (Castagnoli, hardware-computed: SSE 4.2 / ARMv8) is the checksum of
 * iSCSI, ext4's metadata, LevelDB's and RocksDB's logs.
 */
export const CHECK_BYTES = 9;

/** The checksum of bytes as the 8 hex digits a line starts with. */
export function checksumHex(bytes: Uint8Array): string {
  return crc32c(bytes as Buffer)
    .toString(16)
    .padStart(8, '0');
}

/** Writes the 9-byte prefix for `buf[from + CHECK_BYTES, end)` into `buf[from, from + CHECK_BYTES)`. */
export function sealInPlace(buf: Buffer, from: number, end: number): void {
  buf.write(checksumHex(buf.subarray(from + CHECK_BYTES, end)), from, 'latin1');
  buf[from + 8] = 0x20;
}

/** A line of `text` behind its checksum, and its newline. */
export function sealedLine(text: string): Buffer {
  const end = CHECK_BYTES + Buffer.byteLength(text);
  const bytes = Buffer.allocUnsafe(end + 1);
  bytes.write(text, CHECK_BYTES);
  sealInPlace(bytes, 0, end);
  bytes[end] = 0x0a;
  return bytes;
}

const isHex = (b: number) => (b >= 48 && b <= 57) || (b >= 97 && b <= 102);

/** Whether a line carries a checksum prefix (a line of an older format never starts with a hex digit). */
export function carriesChecksum(line: Uint8Array): boolean {
  return line.length > 0 && isHex(line[0]!);
}

/** Whether a line that carries a checksum prefix is whole: its prefix well-formed and matching the rest. */
export function checksumHolds(line: Buffer): boolean {
  if (line.length < CHECK_BYTES || line[8] !== 0x20) return false;
  for (let i = 0; i < 8; i++) if (!isHex(line[i]!)) return false;
  return parseInt(line.toString('latin1', 0, 8), 16) === crc32c(line.subarray(CHECK_BYTES));
}
