/*
 * handshake_flags.h - what smcrd's BPF sock_ops program records about a TCP
 * connection's handshake, read by libsmcr with one map look-up.
 *
 * The value stored per socket (a u32 in the program's sk_storage map) is a
 * set of these bits.  Shared, as plain macros, by the BPF program (built with
 * clang -target bpf) and by libsmcr.
 */
#ifndef SMCR_HANDSHAKE_FLAGS_H
#define SMCR_HANDSHAKE_FLAGS_H

#define SMCR_HS_ACTIVE       0x01u  /* we connected (client side) */
#define SMCR_HS_PASSIVE      0x02u  /* we accepted (server side) */
#define SMCR_HS_OPT_SENT     0x04u  /* our SYN or SYN-ACK carried the SMC option */
#define SMCR_HS_PEER_OPT     0x08u  /* the peer's SYN or SYN-ACK carried it */
#define SMCR_HS_NEGOTIATED   0x10u  /* both did: SMC may be used (CLC next) */
#define SMCR_HS_NO_SPACE     0x20u  /* no room left in the TCP header for the option */
#define SMCR_HS_SYNCOOKIE    0x40u  /* the SYN-ACK was a syncookie: no echo possible */

/* The RFC 7609 experimental TCP option: kind 254, length 6, ExID "SMCR" in EBCDIC. */
#define SMCR_TCPOPT_KIND     254
#define SMCR_TCPOPT_LEN      6
#define SMCR_TCPOPT_EXID     0xE2D4C3D9u

#endif
