/* egress-test-client.c — client helpers for the egress tests (see egress-test.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-test.h"

#include <string.h>

GSocket *
egress_test_connect (guint16 port)
{
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, port);
        g_autoptr (GError) error = NULL;
        GSocket *sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_DEFAULT, &error);

        g_assert_no_error (error);
        g_socket_set_timeout (sock, 30);
        g_socket_connect (sock, addr, NULL, &error);
        g_assert_no_error (error);
        return sock;
}

GString *
egress_test_request (guint16 port, const char *data, gssize len)
{
        g_autoptr (GSocket) sock = egress_test_connect (port);
        GString *out = g_string_new (NULL);
        gsize n = len < 0 ? strlen (data) : (gsize) len;
        gsize off = 0;
        char buf[16384];
        gssize r;

        while (off < n) {
                r = g_socket_send (sock, data + off, n - off, NULL, NULL);
                if (r <= 0)
                        break;
                off += (gsize) r;
        }
        while ((r = g_socket_receive (sock, buf, sizeof buf, NULL, NULL)) > 0)
                g_string_append_len (out, buf, r);
        return out;
}

guint
egress_test_status (const char *response)
{
        if (!g_str_has_prefix (response, "HTTP/1.") || strlen (response) < 12)
                return 0;
        return (guint) g_ascii_strtoull (response + 9, NULL, 10);
}

char *
egress_test_header (const char *response, const char *name)
{
        const char *end = strstr (response, "\r\n\r\n");
        g_autofree char *head = end ? g_strndup (response, (gsize) (end - response)) : NULL;
        g_auto (GStrv) lines = head ? g_strsplit (head, "\r\n", -1) : NULL;
        gsize nl = strlen (name);

        for (char **l = lines; l && *l; l++)
                if (g_ascii_strncasecmp (*l, name, nl) == 0 && (*l)[nl] == ':')
                        return g_strstrip (g_strdup (*l + nl + 1));
        return NULL;
}

char *
egress_test_make_certs (const char *const *names)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        const char *src = g_getenv ("CORRAL_SOURCE_DIR");
        g_autofree char *script = NULL;
        char *dir = g_dir_make_tmp ("corral-certs-XXXXXX", &error);
        int status = 0;

        g_assert_no_error (error);
        g_assert_nonnull (src);
        script = g_build_filename (src, "tests", "fakes", "egress", "make-test-certs.sh", NULL);
        g_ptr_array_add (argv, script);
        g_ptr_array_add (argv, dir);
        for (const char *const *n = names; *n; n++)
                g_ptr_array_add (argv, (gpointer) *n);
        g_ptr_array_add (argv, NULL);
        g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL,
                      &status, &error);
        g_assert_no_error (error);
        g_spawn_check_wait_status (status, &error);
        g_assert_no_error (error);
        return dir;
}
