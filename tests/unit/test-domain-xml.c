/* test-domain-xml.c — golden files for the domain XML builder, and its refusals.
 *
 * REGENERATE=1 rewrites the files in tests/data/domain from the builder; review the diff.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-domain-xml.h"

#include <gio/gio.h>

static CorralDomainConfig
base_config (void)
{
        return (CorralDomainConfig){
                .name = "corral-test",
                .uuid = "6a1f5d2c-6f0e-4f4b-9a5e-0d6f3b1c2a11",
                .memory_mib = 512,
                .vcpus = 2,
                .accel = CORRAL_ACCEL_TCG,
                .kernel = "/var/cache/corral/images/minimal-abc/vmlinuz",
                .initrd = "/var/cache/corral/images/minimal-abc/initramfs.img",
                .cmdline = "console=ttyS0 quiet panic=-1",
                .transport = CORRAL_TRANSPORT_VIRTIO_SERIAL,
                .agent_socket = "/run/corral/vms/test/agent.sock",
                .console_log = "/run/corral/vms/test/console.log",
                .image_name = "minimal",
                .manifest_sha256 = "0123456789abcdef",
                .vm_dir = "/run/corral/vms/test",
        };
}

typedef struct {
        const char *golden;
        void (*tweak) (CorralDomainConfig *c);
} GoldenCase;

static void
tweak_none (CorralDomainConfig *c)
{
}

static void
tweak_disk (CorralDomainConfig *c)
{
        c->disk = "/run/corral/vms/test/disk.qcow2";
}

static void
tweak_vsock (CorralDomainConfig *c)
{
        c->transport = CORRAL_TRANSPORT_VSOCK;
        c->agent_socket = NULL;
}

static void
tweak_vnc (CorralDomainConfig *c)
{
        c->vnc_socket = "/run/corral/vms/test/vnc.sock";
}

/* A desktop for computer use: another size, and the clipboard channel. */
static void
tweak_desktop (CorralDomainConfig *c)
{
        c->vnc_socket = "/run/corral/vms/test/vnc.sock";
        c->display_width = 1920;
        c->display_height = 1080;
        c->clipboard = TRUE;
        c->disk = "/run/corral/vms/test/disk.qcow2";
}

static void
tweak_shares (CorralDomainConfig *c)
{
        c->fs_socket = "/run/corral/vms/test/fs.sock";
        c->fs_shm_name = "corral-fs-0123456789abcdef";
        c->fs_shm_mib = 16;
}

static void
tweak_network (CorralDomainConfig *c)
{
        c->net_socket = "/run/corral/vms/test/net.sock";
}

static void
tweak_kvm (CorralDomainConfig *c)
{
        c->accel = CORRAL_ACCEL_KVM;
        c->memory_mib = 2048;
        c->vcpus = 4;
}

/* Over a remote libvirt: volumes on that host, channels at libvirt's paths, a pty console. */
static void
tweak_remote (CorralDomainConfig *c)
{
        c->remote = TRUE;
        c->kernel = "/var/lib/libvirt/images/corral/corral-minimal-0123456789abcdef-vmlinuz";
        c->initrd = "/var/lib/libvirt/images/corral/corral-minimal-0123456789abcdef-initrd";
        c->disk = "/var/lib/libvirt/images/corral/corral-vm-test.qcow2";
        c->fs_socket = "/run/corral/vms/test/fs.sock";
        c->net_socket = "/run/corral/vms/test/net.sock";
}

/* Root on the system daemon: QEMU as root, as with the embedded driver. */
static void
tweak_qemu_as_root (CorralDomainConfig *c)
{
        c->qemu_as_root = TRUE;
}

/* Escaping, not refusal: '&' and quotes are fine in a command line. */
static void
tweak_escape (CorralDomainConfig *c)
{
        c->cmdline = "console=ttyS0 corral.note=\"a&b<c>'d'\"";
        c->kernel = "/images/it's & <weird>/vmlinuz";
}

static const GoldenCase golden_cases[] = {
        { "minimal.xml", tweak_none },    { "disk.xml", tweak_disk },
        { "vsock.xml", tweak_vsock },     { "vnc.xml", tweak_vnc },
        { "kvm.xml", tweak_kvm },         { "shares.xml", tweak_shares },
        { "network.xml", tweak_network }, { "escape.xml", tweak_escape },
        { "remote.xml", tweak_remote },   { "qemu-as-root.xml", tweak_qemu_as_root },
        { "desktop.xml", tweak_desktop },
};

static void
test_golden (gconstpointer data)
{
        const GoldenCase *gc = data;
        CorralDomainConfig c = base_config ();
        g_autoptr (GError) error = NULL;
        g_autofree char *xml = NULL;
        g_autofree char *expected = NULL;
        g_autofree char *path = g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "tests", "data",
                                                  "domain", gc->golden, NULL);

        gc->tweak (&c);
        xml = corral_domain_xml_build (&c, &error);
        g_assert_no_error (error);
        g_assert_nonnull (xml);
        /* The network boundary: no configuration ever gives the guest a network card, and
         * nothing the guest could share with the host's network stack. */
        g_assert_null (strstr (xml, "<interface"));
        g_assert_null (strstr (xml, "<hostdev"));
        g_assert_null (strstr (xml, "<filesystem"));
        /* The screen is Corral's alone: a unix socket, never a TCP port or another protocol;
         * no sound device, and no pointer that goes through guest software. */
        g_assert_null (strstr (xml, "port='5"));
        g_assert_null (strstr (xml, "<listen"));
        g_assert_null (strstr (xml, "autoport"));
        g_assert_null (strstr (xml, "spice'"));
        g_assert_null (strstr (xml, "<sound"));
        g_assert_null (strstr (xml, "mode='client'"));
        if (strstr (xml, "<graphics"))
                g_assert_nonnull (strstr (xml, "<audio id='1' type='none'/>"));
        if (g_strcmp0 (g_getenv ("REGENERATE"), "1") == 0) {
                g_file_set_contents (path, xml, -1, &error);
                g_assert_no_error (error);
        }
        g_file_get_contents (path, &expected, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (xml, ==, expected);
}

/* What the builder writes in <metadata> reads back. */
static void
test_metadata_roundtrip (void)
{
        CorralDomainConfig c = base_config ();
        g_autoptr (GError) error = NULL;
        g_autofree char *xml = corral_domain_xml_build (&c, &error);
        const char *start = xml ? strstr (xml, "<corral:vm") : NULL;
        const char *end = start ? strstr (start, "</corral:vm>") : NULL;
        g_autofree char *element = NULL;
        g_autoptr (CorralDomainMetadata) meta = NULL;

        g_assert_nonnull (end);
        element = g_strndup (start, end - start + strlen ("</corral:vm>"));
        meta = corral_domain_metadata_parse (element, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (meta->image_name, ==, "minimal");
        g_assert_cmpstr (meta->manifest_sha256, ==, "0123456789abcdef");
        g_assert_cmpstr (meta->transport, ==, "virtio-serial");
        g_assert_cmpstr (meta->accel, ==, "tcg");
        g_assert_cmpstr (meta->agent_socket, ==, "/run/corral/vms/test/agent.sock");
        g_assert_cmpstr (meta->console_log, ==, "/run/corral/vms/test/console.log");
        g_assert_cmpstr (meta->vm_dir, ==, "/run/corral/vms/test");
}

typedef struct {
        const char *what;
        void (*tweak) (CorralDomainConfig *c);
} RefusalCase;

#define REFUSE(fn, stmt)                                                                           \
        static void fn (CorralDomainConfig *c)                                                     \
        {                                                                                          \
                stmt;                                                                              \
        }

REFUSE (r_name_quote, c->name = "corral-'x'")
REFUSE (r_name_lt, c->name = "corral-<x>")
REFUSE (r_name_amp, c->name = "a&b")
REFUSE (r_name_newline, c->name = "corral-x\ny")
REFUSE (r_name_space, c->name = "corral x")
REFUSE (r_name_empty, c->name = "")
REFUSE (r_name_long, c->name = "corral-0123456789012345678901234567890123456789012345678901234567")
REFUSE (r_name_slash, c->name = "../etc")
REFUSE (r_uuid, c->uuid = "6a1f5d2c'/><x")
REFUSE (r_kernel_relative, c->kernel = "images/vmlinuz")
REFUSE (r_initrd_newline, c->initrd = "/images/init\nramfs.img")
REFUSE (r_disk_tab, c->disk = "/images/disk\t.qcow2")
REFUSE (r_disk_relative, c->disk = "disk.qcow2")
REFUSE (r_console_escape, c->console_log = "/log/\x1b[31mred")
REFUSE (r_socket_relative, c->agent_socket = "agent.sock")
REFUSE (r_socket_cr, c->agent_socket = "/run/a\rb.sock")
REFUSE (r_socket_long,
        c->agent_socket = "/run/corral/vms/0123456789012345678901234567890123456789"
                          "01234567890123456789012345678901234567890123456789/a")
REFUSE (r_vnc_del, c->vnc_socket = "/run/vnc\x7f.sock")
REFUSE (r_fs_relative, c->fs_socket = "fs.sock")
REFUSE (r_fs_newline, c->fs_socket = "/run/fs\n.sock")
REFUSE (r_net_relative, c->net_socket = "net.sock")
REFUSE (r_net_newline, c->net_socket = "/run/net\n.sock")
REFUSE (r_shm_name, c->fs_shm_name = "../../etc/x"; c->fs_shm_mib = 20)
REFUSE (r_shm_size, c->fs_shm_name = "corral-fs-x"; c->fs_shm_mib = 100000)
REFUSE (r_shm_pow2, c->fs_shm_name = "corral-fs-x"; c->fs_shm_mib = 20)
REFUSE (r_cmdline_newline, c->cmdline = "console=ttyS0\ninit=/bin/sh")
REFUSE (r_image_quote, c->image_name = "minimal'")
REFUSE (r_sha_lt, c->manifest_sha256 = "abc<def")
REFUSE (r_memory, c->memory_mib = 0)
REFUSE (r_vcpus, c->vcpus = 0)
REFUSE (r_remote_shm, c->remote = TRUE; c->fs_shm_name = "corral-fs-x"; c->fs_shm_mib = 16)
REFUSE (r_remote_vnc, c->remote = TRUE; c->vnc_socket = "/run/corral/vms/test/vnc.sock")
REFUSE (r_remote_vsock, c->remote = TRUE; c->transport = CORRAL_TRANSPORT_VSOCK;
        c->agent_socket = NULL)
REFUSE (r_latin1, c->kernel = "/images/\xff\xfe")
/* A screen's size and clipboard need the screen; its size stays within what a model can see. */
REFUSE (r_size_no_screen, c->display_width = 1024)
REFUSE (r_clipboard_no_screen, c->clipboard = TRUE)
REFUSE (r_screen_small, c->vnc_socket = "/run/v.sock"; c->display_width = 320)
REFUSE (r_screen_tall, c->vnc_socket = "/run/v.sock"; c->display_height = 100000)
REFUSE (r_remote_clipboard, c->remote = TRUE; c->vnc_socket = "/run/v.sock"; c->clipboard = TRUE)

static const RefusalCase refusal_cases[] = {
        { "name-quote", r_name_quote },
        { "name-lt", r_name_lt },
        { "name-amp", r_name_amp },
        { "name-newline", r_name_newline },
        { "name-space", r_name_space },
        { "name-empty", r_name_empty },
        { "name-long", r_name_long },
        { "name-slash", r_name_slash },
        { "uuid", r_uuid },
        { "kernel-relative", r_kernel_relative },
        { "initrd-newline", r_initrd_newline },
        { "disk-tab", r_disk_tab },
        { "disk-relative", r_disk_relative },
        { "console-escape", r_console_escape },
        { "socket-relative", r_socket_relative },
        { "socket-cr", r_socket_cr },
        { "socket-long", r_socket_long },
        { "vnc-del", r_vnc_del },
        { "fs-relative", r_fs_relative },
        { "fs-newline", r_fs_newline },
        { "net-relative", r_net_relative },
        { "net-newline", r_net_newline },
        { "shm-name", r_shm_name },
        { "shm-size", r_shm_size },
        { "shm-power-of-two", r_shm_pow2 },
        { "cmdline-newline", r_cmdline_newline },
        { "image-quote", r_image_quote },
        { "sha-lt", r_sha_lt },
        { "memory", r_memory },
        { "vcpus", r_vcpus },
        { "path-not-utf8", r_latin1 },
        { "remote-shm", r_remote_shm },
        { "remote-vnc", r_remote_vnc },
        { "remote-vsock", r_remote_vsock },
        { "size-without-screen", r_size_no_screen },
        { "clipboard-without-screen", r_clipboard_no_screen },
        { "screen-too-small", r_screen_small },
        { "screen-too-tall", r_screen_tall },
        { "remote-clipboard", r_remote_clipboard },
};

static void
test_refusal (gconstpointer data)
{
        const RefusalCase *rc = data;
        CorralDomainConfig c = base_config ();
        g_autoptr (GError) error = NULL;
        g_autofree char *xml = NULL;

        rc->tweak (&c);
        xml = corral_domain_xml_build (&c, &error);
        g_assert_null (xml);
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
test_name_limits (void)
{
        g_autofree char *max = g_strnfill (CORRAL_NAME_MAX, 'a');
        g_autofree char *over = g_strnfill (CORRAL_NAME_MAX + 1, 'a');

        g_assert_true (corral_domain_name_is_valid (max));
        g_assert_false (corral_domain_name_is_valid (over));
        g_assert_true (corral_domain_name_is_valid ("corral-A.b_c-9"));
        g_assert_false (corral_domain_name_is_valid (NULL));
        g_assert_false (corral_domain_name_is_valid ("-x"));
}

static void
test_metadata_hostile (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralDomainMetadata) meta = corral_domain_metadata_parse (
                "<corral:vm xmlns:corral='x'><corral:agent-socket path='rel/a.sock'/>"
                "<corral:dir path='/ok'/></corral:vm>",
                &error);

        g_assert_no_error (error);
        g_assert_null (meta->agent_socket);
        g_assert_cmpstr (meta->vm_dir, ==, "/ok");
        g_assert_null (corral_domain_metadata_parse ("<a><b></a>", NULL));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        for (gsize i = 0; i < G_N_ELEMENTS (golden_cases); i++) {
                g_autofree char *name =
                        g_strdup_printf ("/domain-xml/golden/%s", golden_cases[i].golden);
                g_test_add_data_func (name, &golden_cases[i], test_golden);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (refusal_cases); i++) {
                g_autofree char *name =
                        g_strdup_printf ("/domain-xml/refuse/%s", refusal_cases[i].what);
                g_test_add_data_func (name, &refusal_cases[i], test_refusal);
        }
        g_test_add_func ("/domain-xml/name-limits", test_name_limits);
        g_test_add_func ("/domain-xml/metadata/roundtrip", test_metadata_roundtrip);
        g_test_add_func ("/domain-xml/metadata/hostile", test_metadata_hostile);
        return g_test_run ();
}
