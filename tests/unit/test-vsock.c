/* test-vsock.c — reading the guest CID from live domain XML, and the refusal of bad ones.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib.h>

#include "corral-vsock.h"

static void
test_cid (void)
{
        static const struct {
                const char *xml;
                gboolean ok;
                guint32 cid;
        } cases[] = {
                { "<domain><devices><vsock model='virtio'><cid auto='yes' address='3'/></vsock>"
                  "</devices></domain>",
                  TRUE, 3 },
                { "<domain><devices><vsock model='virtio'><cid auto='yes' address='4294967294'/>"
                  "</vsock></devices></domain>",
                  TRUE, 4294967294u },
                /* Not started yet: libvirt has not assigned one. */
                { "<domain><devices><vsock model='virtio'><cid auto='yes'/></vsock></devices>"
                  "</domain>",
                  FALSE, 0 },
                /* Reserved CIDs and garbage. */
                { "<domain><vsock><cid address='2'/></vsock></domain>", FALSE, 0 },
                { "<domain><vsock><cid address='4294967295'/></vsock></domain>", FALSE, 0 },
                { "<domain><vsock><cid address='-3'/></vsock></domain>", FALSE, 0 },
                { "<domain><vsock><cid address='3x'/></vsock></domain>", FALSE, 0 },
                /* A cid outside <vsock> is something else. */
                { "<domain><other><cid address='5'/></other></domain>", FALSE, 0 },
                { "<domain><vsock><cid address='5'/>", FALSE, 0 },
                { "not xml", FALSE, 0 },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                guint32 cid = 7777;

                g_assert_cmpint (corral_vsock_cid_from_domain_xml (cases[i].xml, &cid), ==,
                                 cases[i].ok);
                g_assert_cmpuint (cid, ==, cases[i].ok ? cases[i].cid : 7777);
        }
}

/* Without vhost-vsock (as on the build machines) the connect fails cleanly with an error. */
static void
test_connect_refused (void)
{
        g_autoptr (GError) error = NULL;
        int fd = corral_vsock_connect (3, CORRAL_VSOCK_AGENT_PORT, &error);

        if (fd >= 0) {
                g_test_skip ("a guest answers on vsock CID 3 here");
                return;
        }
        g_assert_nonnull (error);
        g_assert_true (g_str_has_prefix (error->message, "cannot connect to vsock 3:1024"));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/vsock/cid-from-xml", test_cid);
        g_test_add_func ("/vsock/connect-refused", test_connect_refused);
        return g_test_run ();
}
