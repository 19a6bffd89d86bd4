/* corral-vm-host.c — host facts and the choices made from them.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-host.h"
#include <string.h>

#include "corral-glib-compat.h"
#include "corral-unix.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <unistd.h>

void
corral_host_selection_free (CorralHostSelection *sel)
{
        if (!sel)
                return;
        g_free (sel->uri);
        g_free (sel->embed_root);
        g_free (sel->state_dir);
        g_free (sel);
}

static gboolean
opens_rw (const char *path)
{
        g_autofd int fd = open (path, O_RDWR | O_CLOEXEC | O_NOCTTY);

        return fd >= 0;
}

/* A socket file that nothing listens on (a daemon that died without systemd) does not count;
 * with systemd's socket activation, connecting starts the daemon. */
static gboolean
accepts (const char *path)
{
        g_autofd int fd = corral_unix_connect (path);

        return fd >= 0;
}

void
corral_host_facts_probe (CorralHostFacts *facts, char **ret_state_dir)
{
        const char *xdg = g_getenv ("XDG_STATE_HOME");
        g_autofree char *base = NULL;

        if (xdg && g_path_is_absolute (xdg))
                base = g_strdup (xdg);
        else
                base = g_build_filename (g_get_home_dir (), ".local", "state", NULL);
        *facts = (CorralHostFacts){
                .is_root = geteuid () == 0,
                .env_uri = g_getenv ("CORRAL_LIBVIRT_URI"),
                .env_accel = g_getenv ("CORRAL_ACCEL"),
                .kvm_rw = opens_rw ("/dev/kvm"),
                .kvm_pvm = g_file_test ("/sys/module/kvm_pvm", G_FILE_TEST_EXISTS),
                .vhost_vsock_rw = opens_rw ("/dev/vhost-vsock"),
        };
        if (facts->is_root)
                facts->system_libvirtd = accepts (CORRAL_SYSTEM_LIBVIRTD_SOCKET) ||
                                         accepts (CORRAL_SYSTEM_VIRTQEMUD_SOCKET);
        *ret_state_dir = g_build_filename (base, "corral", NULL);
        facts->state_dir = *ret_state_dir;
}

static gboolean
select_accel (const CorralHostFacts *facts, CorralAccel *ret_accel, GError **error)
{
        if (facts->env_accel && *facts->env_accel) {
                if (corral_accel_from_string (facts->env_accel, ret_accel))
                        return TRUE;
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             "CORRAL_ACCEL must be “kvm” or “tcg”, not “%s”", facts->env_accel);
                return FALSE;
        }
        /* With kvm_pvm loaded, /dev/kvm opens but guests hang in early boot. */
        *ret_accel = facts->kvm_rw && !facts->kvm_pvm ? CORRAL_ACCEL_KVM : CORRAL_ACCEL_TCG;
        return TRUE;
}

CorralHostSelection *
corral_host_select (const CorralHostFacts *facts, GError **error)
{
        g_autoptr (CorralHostSelection) sel = g_new0 (CorralHostSelection, 1);

        g_return_val_if_fail (facts != NULL && facts->state_dir != NULL, NULL);

        if (!g_path_is_absolute (facts->state_dir)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             "the state folder must be an absolute path, not “%s”",
                             facts->state_dir);
                return NULL;
        }
        if (!select_accel (facts, &sel->accel, error))
                return NULL;
        sel->accel_forced = facts->env_accel && *facts->env_accel;
        sel->state_dir = g_strdup (facts->state_dir);
        sel->transport =
                facts->vhost_vsock_rw ? CORRAL_TRANSPORT_VSOCK : CORRAL_TRANSPORT_VIRTIO_SERIAL;
        if (facts->env_uri && *facts->env_uri) {
                sel->uri = g_strdup (facts->env_uri);
        } else if (facts->is_root && facts->system_libvirtd) {
                /* Several programs at once (the app, corralctl): the embedded driver allows
                 * one process per root folder. */
                sel->uri = g_strdup ("qemu:///system");
        } else if (facts->is_root) {
                sel->embed_root = g_build_filename (facts->state_dir, "libvirt", NULL);
                sel->uri = g_strdup_printf ("qemu:///embed?root=%s", sel->embed_root);
        } else {
                sel->uri = g_strdup ("qemu:///session");
        }
        sel->remote = corral_host_uri_is_remote (sel->uri);
        sel->qemu_as_root = facts->is_root && g_str_equal (sel->uri, "qemu:///system");
        if (sel->remote)
                sel->transport = CORRAL_TRANSPORT_VIRTIO_SERIAL;
        /* An explicit embed URI also needs its qemu.conf. */
        if (!sel->embed_root && g_str_has_prefix (sel->uri, "qemu:///embed?root=/"))
                sel->embed_root = g_strdup (sel->uri + strlen ("qemu:///embed?root="));
        return g_steal_pointer (&sel);
}

CorralHostSelection *
corral_host_select_default (GError **error)
{
        CorralHostFacts facts;
        g_autofree char *state_dir = NULL;

        corral_host_facts_probe (&facts, &state_dir);
        return corral_host_select (&facts, error);
}

gboolean
corral_host_prepare (const CorralHostSelection *sel, GError **error)
{
        g_autofree char *etc = NULL;
        g_autofree char *conf = NULL;

        if (g_mkdir_with_parents (sel->state_dir, 0700) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             "cannot create %s: %s", sel->state_dir, g_strerror (errsv));
                return FALSE;
        }
        if (!sel->embed_root)
                return TRUE;
        etc = g_build_filename (sel->embed_root, "etc", NULL);
        conf = g_build_filename (etc, "qemu.conf", NULL);
        if (g_mkdir_with_parents (etc, 0700) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             "cannot create %s: %s", etc, g_strerror (errsv));
                return FALSE;
        }
        return g_file_set_contents_full (conf, CORRAL_EMBED_QEMU_CONF, -1,
                                         G_FILE_SET_CONTENTS_CONSISTENT, 0600, error);
}

gboolean
corral_host_uri_is_remote (const char *uri)
{
        g_autoptr (GUri) parsed = NULL;
        const char *scheme, *host;

        g_return_val_if_fail (uri != NULL, TRUE);
        parsed = g_uri_parse (uri, G_URI_FLAGS_NONE, NULL);
        if (!parsed)
                return TRUE;
        scheme = g_uri_get_scheme (parsed);
        host = g_uri_get_host (parsed);
        /* qemu+unix:// is a local transport; every other +transport crosses machines. */
        if (strchr (scheme, '+') && !g_str_has_suffix (scheme, "+unix"))
                return TRUE;
        return host && *host && g_strcmp0 (host, "localhost") != 0;
}
