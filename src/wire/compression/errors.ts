/** What a decompressor throws: the caller turns it into CORRUPT_MESSAGE with the batch's position. */
export class CodecError extends Error {
  constructor(
    message: string,
    /** The content is larger than the bound asked for (a decompression bomb, or just too large). */
    readonly tooLarge = false,
  ) {
    super(message);
  }
}
