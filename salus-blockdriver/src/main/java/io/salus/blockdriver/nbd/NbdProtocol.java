package io.salus.blockdriver.nbd;

/**
 * Constants of the NBD protocol (fixed newstyle negotiation, simple and structured replies), as
 * named in the NBD protocol specification (doc/proto.md of NetworkBlockDevice/nbd).
 */
public final class NbdProtocol {
  private NbdProtocol() {}

  public static final long NBDMAGIC = 0x4e42444d41474943L;
  public static final long IHAVEOPT = 0x49484156454F5054L;
  public static final long OPTION_REPLY_MAGIC = 0x0003e889045565a9L;
  public static final int REQUEST_MAGIC = 0x25609513;
  public static final int SIMPLE_REPLY_MAGIC = 0x67446698;
  public static final int STRUCTURED_REPLY_MAGIC = 0x668e33ef;

  // handshake flags (server) and client flags
  public static final int FLAG_FIXED_NEWSTYLE = 1;
  public static final int FLAG_NO_ZEROES = 1 << 1;
  public static final int FLAG_C_FIXED_NEWSTYLE = 1;
  public static final int FLAG_C_NO_ZEROES = 1 << 1;

  // transmission flags
  public static final int TFLAG_HAS_FLAGS = 1;
  public static final int TFLAG_READ_ONLY = 1 << 1;
  public static final int TFLAG_SEND_FLUSH = 1 << 2;
  public static final int TFLAG_SEND_FUA = 1 << 3;
  public static final int TFLAG_SEND_TRIM = 1 << 5;
  public static final int TFLAG_SEND_WRITE_ZEROES = 1 << 6;
  public static final int TFLAG_CAN_MULTI_CONN = 1 << 8;

  // options
  public static final int OPT_EXPORT_NAME = 1;
  public static final int OPT_ABORT = 2;
  public static final int OPT_LIST = 3;
  public static final int OPT_STARTTLS = 5;
  public static final int OPT_INFO = 6;
  public static final int OPT_GO = 7;
  public static final int OPT_STRUCTURED_REPLY = 8;

  // option replies
  public static final int REP_ACK = 1;
  public static final int REP_SERVER = 2;
  public static final int REP_INFO = 3;
  public static final int REP_ERR_UNSUP = (1 << 31) + 1;
  public static final int REP_ERR_POLICY = (1 << 31) + 2;
  public static final int REP_ERR_INVALID = (1 << 31) + 3;
  public static final int REP_ERR_UNKNOWN = (1 << 31) + 6;
  public static final int REP_ERR_TOO_BIG = (1 << 31) + 9;

  // info types
  public static final int INFO_EXPORT = 0;
  public static final int INFO_NAME = 1;
  public static final int INFO_DESCRIPTION = 2;
  public static final int INFO_BLOCK_SIZE = 3;

  // commands
  public static final int CMD_READ = 0;
  public static final int CMD_WRITE = 1;
  public static final int CMD_DISC = 2;
  public static final int CMD_FLUSH = 3;
  public static final int CMD_TRIM = 4;
  public static final int CMD_CACHE = 5;
  public static final int CMD_WRITE_ZEROES = 6;
  public static final int CMD_BLOCK_STATUS = 7;

  // command flags
  public static final int CMD_FLAG_FUA = 1;
  public static final int CMD_FLAG_NO_HOLE = 1 << 1;
  public static final int CMD_FLAG_DF = 1 << 2;

  // structured reply
  public static final int REPLY_FLAG_DONE = 1;
  public static final int REPLY_TYPE_NONE = 0;
  public static final int REPLY_TYPE_OFFSET_DATA = 1;
  public static final int REPLY_TYPE_ERROR = (1 << 15) + 1;

  // errors
  public static final int EPERM = 1;
  public static final int EIO = 5;
  public static final int ENOMEM = 12;
  public static final int EINVAL = 22;
  public static final int ENOSPC = 28;
  public static final int EOVERFLOW = 75;
  public static final int ENOTSUP = 95;
  public static final int ESHUTDOWN = 108;

  /** Block size constraints advertised with NBD_INFO_BLOCK_SIZE. */
  public static final int MIN_BLOCK = 512;
  public static final int MAX_PAYLOAD = 32 << 20;

  public static String commandName(int type) {
    switch (type) {
      case CMD_READ: return "READ";
      case CMD_WRITE: return "WRITE";
      case CMD_DISC: return "DISC";
      case CMD_FLUSH: return "FLUSH";
      case CMD_TRIM: return "TRIM";
      case CMD_CACHE: return "CACHE";
      case CMD_WRITE_ZEROES: return "WRITE_ZEROES";
      case CMD_BLOCK_STATUS: return "BLOCK_STATUS";
      default: return "CMD#" + type;
    }
  }
}
