/* test-vmm-select.c — URI, accelerator and transport choices from injected host facts.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-host.h"

#include <gio/gio.h>
#include <glib/gstdio.h>

static CorralHostFacts
facts (void)
{
        return (CorralHostFacts){ .state_dir = "/home/u/.local/state/corral" };
}

static CorralHostSelection *
select_ok (const CorralHostFacts *f)
{
        g_autoptr (GError) error = NULL;
        CorralHostSelection *sel = corral_host_select (f, &error);

        g_assert_no_error (error);
        g_assert_nonnull (sel);
        return sel;
}

static void
test_uri_user (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) sel = select_ok (&f);

        g_assert_cmpstr (sel->uri, ==, "qemu:///session");
        g_assert_null (sel->embed_root);
}

static void
test_uri_root (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) sel = NULL;

        f.is_root = TRUE;
        f.state_dir = "/root/.local/state/corral";
        sel = select_ok (&f);
        g_assert_cmpstr (sel->uri, ==, "qemu:///embed?root=/root/.local/state/corral/libvirt");
        g_assert_cmpstr (sel->embed_root, ==, "/root/.local/state/corral/libvirt");
}

/* Root with the system daemon running uses it (several programs at once), with QEMU as root
 * like the embedded driver; an ordinary user keeps qemu:///session. */
static void
test_uri_root_system (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) sel = NULL;
        g_autoptr (CorralHostSelection) user_sel = NULL;

        f.system_libvirtd = TRUE;
        user_sel = select_ok (&f);
        g_assert_cmpstr (user_sel->uri, ==, "qemu:///session");
        g_assert_false (user_sel->qemu_as_root);
        f.is_root = TRUE;
        f.state_dir = "/root/.local/state/corral";
        sel = select_ok (&f);
        g_assert_cmpstr (sel->uri, ==, "qemu:///system");
        g_assert_null (sel->embed_root);
        g_assert_true (sel->qemu_as_root);
        g_assert_false (sel->remote);
}

static void
test_uri_env_wins (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) sel = NULL;
        g_autoptr (CorralHostSelection) sel2 = NULL;

        f.is_root = TRUE;
        f.env_uri = "qemu+ssh://build/system";
        sel = select_ok (&f);
        g_assert_cmpstr (sel->uri, ==, "qemu+ssh://build/system");
        g_assert_null (sel->embed_root);

        f.env_uri = "qemu:///embed?root=/tmp/x";
        sel2 = select_ok (&f);
        g_assert_cmpstr (sel2->embed_root, ==, "/tmp/x");
}

static void
test_accel (void)
{
        static const struct {
                gboolean kvm_rw, kvm_pvm;
                const char *env;
                CorralAccel expected;
        } cases[] = {
                { FALSE, FALSE, NULL, CORRAL_ACCEL_TCG }, { TRUE, FALSE, NULL, CORRAL_ACCEL_KVM },
                { TRUE, TRUE, NULL, CORRAL_ACCEL_TCG },   { FALSE, TRUE, NULL, CORRAL_ACCEL_TCG },
                { TRUE, TRUE, "kvm", CORRAL_ACCEL_KVM },  { TRUE, FALSE, "tcg", CORRAL_ACCEL_TCG },
                { TRUE, FALSE, "", CORRAL_ACCEL_KVM },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                CorralHostFacts f = facts ();
                g_autoptr (CorralHostSelection) sel = NULL;

                f.kvm_rw = cases[i].kvm_rw;
                f.kvm_pvm = cases[i].kvm_pvm;
                f.env_accel = cases[i].env;
                sel = select_ok (&f);
                g_assert_cmpint (sel->accel, ==, cases[i].expected);
        }
}

static void
test_accel_bad_env (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHostSelection) sel = NULL;

        f.env_accel = "hvf";
        sel = corral_host_select (&f, &error);
        g_assert_null (sel);
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
test_transport (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) serial = select_ok (&f);
        g_autoptr (CorralHostSelection) vsock = NULL;

        g_assert_cmpint (serial->transport, ==, CORRAL_TRANSPORT_VIRTIO_SERIAL);
        f.vhost_vsock_rw = TRUE;
        vsock = select_ok (&f);
        g_assert_cmpint (vsock->transport, ==, CORRAL_TRANSPORT_VSOCK);
}

/* A remote URI: virtio-serial even where this machine has vsock, and no embed root. */
static void
test_transport_remote (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) remote = NULL;
        g_autoptr (CorralHostSelection) local = NULL;

        f.vhost_vsock_rw = TRUE;
        f.is_root = TRUE;
        f.env_uri = "qemu+ssh://builder.example/system";
        remote = select_ok (&f);
        g_assert_true (remote->remote);
        g_assert_cmpint (remote->transport, ==, CORRAL_TRANSPORT_VIRTIO_SERIAL);
        g_assert_null (remote->embed_root);
        g_assert_false (remote->accel_forced);
        f.env_uri = "qemu+unix:///system";
        f.env_accel = "tcg";
        local = select_ok (&f);
        g_assert_false (local->remote);
        g_assert_cmpint (local->transport, ==, CORRAL_TRANSPORT_VSOCK);
        g_assert_true (local->accel_forced);
}

static void
test_relative_state_dir (void)
{
        CorralHostFacts f = facts ();
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHostSelection) sel = NULL;

        f.state_dir = "state/corral";
        sel = corral_host_select (&f, &error);
        g_assert_null (sel);
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
test_prepare_writes_qemu_conf (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *tmp = g_dir_make_tmp ("corral-select-XXXXXX", &error);
        g_autofree char *state = g_build_filename (tmp, "state", NULL);
        CorralHostFacts f = facts ();
        g_autoptr (CorralHostSelection) sel = NULL;
        g_autofree char *conf_path = NULL;
        g_autofree char *conf = NULL;

        g_assert_no_error (error);
        f.is_root = TRUE;
        f.state_dir = state;
        sel = select_ok (&f);
        g_assert_true (corral_host_prepare (sel, &error));
        g_assert_no_error (error);
        conf_path = g_build_filename (sel->embed_root, "etc", "qemu.conf", NULL);
        g_file_get_contents (conf_path, &conf, NULL, &error);
        g_assert_no_error (error);
        g_assert_nonnull (strstr (conf, "stdio_handler = \"file\""));
        g_assert_nonnull (strstr (conf, "security_driver = \"none\""));
        g_assert_nonnull (strstr (conf, "user = \"root\""));
        g_assert_nonnull (strstr (conf, "group = \"root\""));
        g_unlink (conf_path);
        g_autofree char *etc = g_path_get_dirname (conf_path);
        g_rmdir (etc);
        g_rmdir (sel->embed_root);
        g_rmdir (state);
        g_rmdir (tmp);
}

static void
test_probe_env (void)
{
        CorralHostFacts f;
        g_autofree char *state_dir = NULL;

        g_setenv ("XDG_STATE_HOME", "/xdg/state", TRUE);
        corral_host_facts_probe (&f, &state_dir);
        g_assert_cmpstr (state_dir, ==, "/xdg/state/corral");
        g_assert_cmpstr (f.state_dir, ==, state_dir);
}

/* Remote URIs reach the agent through libvirt's stream; local ones through the socket. */
static void
test_uri_remote (void)
{
        static const struct {
                const char *uri;
                gboolean remote;
        } cases[] = {
                { "qemu:///session", FALSE },
                { "qemu:///system", FALSE },
                { "qemu:///embed?root=/var/lib/corral", FALSE },
                { "qemu+unix:///system", FALSE },
                { "qemu://localhost/system", FALSE },
                { "qemu+ssh://user@build-box/system", TRUE },
                { "qemu+tls://host.example/system", TRUE },
                { "qemu+tcp://10.0.0.1/system", TRUE },
                { "qemu://other-host/system", TRUE },
                { "not a uri", TRUE },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
                g_assert_cmpint (corral_host_uri_is_remote (cases[i].uri), ==, cases[i].remote);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/vmm-select/uri/user", test_uri_user);
        g_test_add_func ("/vmm-select/uri/root", test_uri_root);
        g_test_add_func ("/vmm-select/uri/root-system", test_uri_root_system);
        g_test_add_func ("/vmm-select/uri/env-wins", test_uri_env_wins);
        g_test_add_func ("/vmm-select/accel", test_accel);
        g_test_add_func ("/vmm-select/accel/bad-env", test_accel_bad_env);
        g_test_add_func ("/vmm-select/transport", test_transport);
        g_test_add_func ("/vmm-select/transport/remote", test_transport_remote);
        g_test_add_func ("/vmm-select/state-dir/relative", test_relative_state_dir);
        g_test_add_func ("/vmm-select/prepare", test_prepare_writes_qemu_conf);
        g_test_add_func ("/vmm-select/probe/env", test_probe_env);
        g_test_add_func ("/vmm-select/uri/remote", test_uri_remote);
        return g_test_run ();
}
