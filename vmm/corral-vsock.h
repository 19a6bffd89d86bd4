/* corral-vsock.h — the host side of the vsock transport: finding a running domain's guest CID
 * and connecting to the agent's port.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The agent's vsock port in the guest (guest-image/minimal/init starts it there). */
#define CORRAL_VSOCK_AGENT_PORT 1024

/* Reads <vsock><cid address='N'/></vsock> from a live domain XML (libvirt fills in the address
 * when it auto-assigns one). Returns FALSE, with *ret_cid untouched, when there is none or it is
 * not a valid guest CID (3 .. 0xFFFFFFFE). */
gboolean corral_vsock_cid_from_domain_xml (const char *xml, guint32 *ret_cid);

/* A connected AF_VSOCK stream (O_CLOEXEC) to cid:port, or -1 with error set. */
int corral_vsock_connect (guint32 cid, guint32 port, GError **error);

G_END_DECLS
