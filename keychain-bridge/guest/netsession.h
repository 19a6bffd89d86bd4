/* netsession.h — the guest proxy's session from the host (NET-PROTOCOL.md "Sessions"): the
 * egress.hello result, validated, and what it changes in the VM: the environment file the guest
 * agent gives every command and the session CA in the system trust store.
 *
 * Plain C (libc + proto). Functions return 0 or a negative errno.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

#define NETSESSION_MAX_ENV 64
#define NETSESSION_MAX_CA (32 * 1024)
#define NETSESSION_MARKER "# corral session CA (replaced at every session)"

typedef struct {
        char *token; /* [A-Za-z0-9_-]{16,128} */
        char *names[NETSESSION_MAX_ENV]; /* environment variable names of the placeholders */
        char *values[NETSESSION_MAX_ENV]; /* the placeholders */
        size_t n_env;
        char *ca_pem; /* nullable: PEM certificate(s) */
} NetSession;

/* Validates an egress.hello result into s (cleared first). -EINVAL when anything is off. */
int netsession_parse (const cJSON *result, NetSession *s);
void netsession_clear (NetSession *s);

/* net.env holds the session's proxy token: only its owner (root, which the guest agent runs as)
 * reads it; commands get its values from the agent, never from the file. */
#define NETSESSION_ENV_MODE 0600

/* Writes DIR/net.env (KEY=VALUE lines: the proxy variables for port, the placeholders and, with
 * a CA, NODE_EXTRA_CA_CERTS; NETSESSION_ENV_MODE) and DIR/session-ca.pem (0644), each replaced
 * atomically. */
int netsession_write_env (const NetSession *s, const char *dir, int port);

/* Rewrites bundle (the system's CA file) as what it had before the marker, plus the session CA
 * after the marker; without a CA, only removes an earlier session's block. */
int netsession_write_trust (const NetSession *s, const char *bundle);
