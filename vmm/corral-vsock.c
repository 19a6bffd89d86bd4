/* corral-vsock.c — see corral-vsock.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vsock.h"

#include <errno.h>
#include <gio/gio.h>
#include <linux/vm_sockets.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
        gboolean in_vsock;
        gboolean found;
        guint32 cid;
} CidParse;

static void
cid_start (GMarkupParseContext *context,
           const char *element,
           const char **names,
           const char **values,
           gpointer user_data,
           GError **error)
{
        CidParse *p = user_data;

        if (g_str_equal (element, "vsock")) {
                p->in_vsock = TRUE;
                return;
        }
        if (!p->in_vsock || !g_str_equal (element, "cid"))
                return;
        for (gsize i = 0; names[i]; i++) {
                guint64 v;

                if (!g_str_equal (names[i], "address"))
                        continue;
                /* CIDs 0-2 are the hypervisor, local and host; 0xFFFFFFFF is "any". */
                if (g_ascii_string_to_unsigned (values[i], 10, 3, 0xFFFFFFFEu, &v, NULL)) {
                        p->cid = (guint32) v;
                        p->found = TRUE;
                }
        }
}

static void
cid_end (GMarkupParseContext *context, const char *element, gpointer user_data, GError **error)
{
        CidParse *p = user_data;

        if (g_str_equal (element, "vsock"))
                p->in_vsock = FALSE;
}

gboolean
corral_vsock_cid_from_domain_xml (const char *xml, guint32 *ret_cid)
{
        static const GMarkupParser parser = { cid_start, cid_end, NULL, NULL, NULL };
        CidParse p = { 0 };
        g_autoptr (GMarkupParseContext) ctx = NULL;

        g_return_val_if_fail (xml != NULL && ret_cid != NULL, FALSE);
        ctx = g_markup_parse_context_new (&parser, 0, &p, NULL);
        if (!g_markup_parse_context_parse (ctx, xml, -1, NULL) ||
            !g_markup_parse_context_end_parse (ctx, NULL) || !p.found)
                return FALSE;
        *ret_cid = p.cid;
        return TRUE;
}

int
corral_vsock_connect (guint32 cid, guint32 port, GError **error)
{
        struct sockaddr_vm addr = { .svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port };
        int fd = socket (AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || connect (fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
                int errsv = errno;

                if (fd >= 0)
                        close (fd);
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             "cannot connect to vsock %u:%u: %s", cid, port, g_strerror (errsv));
                return -1;
        }
        return fd;
}
