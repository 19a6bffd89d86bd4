/* corral-domain-xml.c — the domain XML builder and its metadata reader.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-domain-xml.h"

#include <gio/gio.h>
#include <string.h>

/* A tiny escaping writer: elements, attributes and text, never raw strings. ---------------- */

typedef struct {
        GString *out;
        guint depth;
} XmlWriter;

static void
xml_indent (XmlWriter *w)
{
        for (guint i = 0; i < w->depth; i++)
                g_string_append (w->out, "  ");
}

static void
xml_attrs (XmlWriter *w, va_list ap)
{
        const char *key;

        while ((key = va_arg (ap, const char *))) {
                const char *value = va_arg (ap, const char *);
                g_autofree char *esc = g_markup_escape_text (value, -1);

                g_string_append_printf (w->out, " %s='%s'", key, esc);
        }
}

/* Attributes: key, value pairs, then NULL. */
G_GNUC_NULL_TERMINATED static void
xml_open (XmlWriter *w, const char *element, ...)
{
        va_list ap;

        xml_indent (w);
        g_string_append_printf (w->out, "<%s", element);
        va_start (ap, element);
        xml_attrs (w, ap);
        va_end (ap);
        g_string_append (w->out, ">\n");
        w->depth++;
}

G_GNUC_NULL_TERMINATED static void
xml_empty (XmlWriter *w, const char *element, ...)
{
        va_list ap;

        xml_indent (w);
        g_string_append_printf (w->out, "<%s", element);
        va_start (ap, element);
        xml_attrs (w, ap);
        va_end (ap);
        g_string_append (w->out, "/>\n");
}

/* An element with attributes (key, value pairs, then NULL) and text content. */
G_GNUC_NULL_TERMINATED static void
xml_text_attrs (XmlWriter *w, const char *element, const char *text, ...)
{
        g_autofree char *esc = g_markup_escape_text (text, -1);
        va_list ap;

        xml_indent (w);
        g_string_append_printf (w->out, "<%s", element);
        va_start (ap, text);
        xml_attrs (w, ap);
        va_end (ap);
        g_string_append_printf (w->out, ">%s</%s>\n", esc, element);
}

static void
xml_text (XmlWriter *w, const char *element, const char *text)
{
        xml_text_attrs (w, element, text, NULL);
}

static void
xml_close (XmlWriter *w, const char *element)
{
        w->depth--;
        xml_indent (w);
        g_string_append_printf (w->out, "</%s>\n", element);
}

/* Names and values ---------------------------------------------------------------------------- */

const char *
corral_accel_to_string (CorralAccel accel)
{
        return accel == CORRAL_ACCEL_KVM ? "kvm" : "tcg";
}

gboolean
corral_accel_from_string (const char *str, CorralAccel *ret_accel)
{
        if (g_strcmp0 (str, "kvm") == 0)
                *ret_accel = CORRAL_ACCEL_KVM;
        else if (g_strcmp0 (str, "tcg") == 0)
                *ret_accel = CORRAL_ACCEL_TCG;
        else
                return FALSE;
        return TRUE;
}

const char *
corral_transport_to_string (CorralTransport transport)
{
        return transport == CORRAL_TRANSPORT_VSOCK ? "vsock" : "virtio-serial";
}

gboolean
corral_transport_from_string (const char *str, CorralTransport *ret_transport)
{
        if (g_strcmp0 (str, "vsock") == 0)
                *ret_transport = CORRAL_TRANSPORT_VSOCK;
        else if (g_strcmp0 (str, "virtio-serial") == 0)
                *ret_transport = CORRAL_TRANSPORT_VIRTIO_SERIAL;
        else
                return FALSE;
        return TRUE;
}

gboolean
corral_domain_name_is_valid (const char *name)
{
        gsize len;

        if (!name)
                return FALSE;
        len = strlen (name);
        if (len == 0 || len > CORRAL_NAME_MAX || name[0] == '.' || name[0] == '-')
                return FALSE;
        for (const char *p = name; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '_' && *p != '.' && *p != '-')
                        return FALSE;
        return TRUE;
}

gboolean
corral_domain_path_is_valid (const char *path)
{
        if (!path || path[0] != '/' || strlen (path) > 4096)
                return FALSE;
        if (!g_utf8_validate (path, -1, NULL))
                return FALSE;
        for (const guchar *p = (const guchar *) path; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return FALSE;
        return TRUE;
}

static gboolean
text_is_valid (const char *text)
{
        if (!text || !g_utf8_validate (text, -1, NULL) || strlen (text) > 4096)
                return FALSE;
        for (const guchar *p = (const guchar *) text; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return FALSE;
        return TRUE;
}

static gboolean
token_is_valid (const char *token, gsize max)
{
        gsize len = token ? strlen (token) : 0;

        if (len == 0 || len > max)
                return FALSE;
        for (const char *p = token; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_' && *p != '.')
                        return FALSE;
        return TRUE;
}

static gboolean
refuse (GError **error, const char *what, const char *why)
{
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "domain config: %s %s", what,
                     why);
        return FALSE;
}

static gboolean
check_path (const char *path, const char *what, gboolean optional, GError **error)
{
        if (!path && optional)
                return TRUE;
        if (!corral_domain_path_is_valid (path))
                return refuse (error, what, "must be an absolute path without control characters");
        return TRUE;
}

static guint
display_width (const CorralDomainConfig *c)
{
        return c->display_width ? c->display_width : CORRAL_DISPLAY_DEFAULT_WIDTH;
}

static guint
display_height (const CorralDomainConfig *c)
{
        return c->display_height ? c->display_height : CORRAL_DISPLAY_DEFAULT_HEIGHT;
}

static gboolean
check_config (const CorralDomainConfig *c, GError **error)
{
        if (!corral_domain_name_is_valid (c->name))
                return refuse (error, "name", "must be 1-64 characters from [A-Za-z0-9_.-]");
        if (!c->uuid || !g_uuid_string_is_valid (c->uuid))
                return refuse (error, "uuid", "is not a valid UUID");
        if (c->memory_mib < 64 || c->memory_mib > 1024 * 1024)
                return refuse (error, "memory", "must be between 64 MiB and 1 TiB");
        if (c->vcpus < 1 || c->vcpus > 256)
                return refuse (error, "vcpus", "must be between 1 and 256");
        if (!text_is_valid (c->cmdline))
                return refuse (error, "kernel command line", "contains control characters");
        if (!token_is_valid (c->image_name, 64))
                return refuse (error, "image name", "must be 1-64 characters from [A-Za-z0-9_.-]");
        if (c->manifest_sha256 && !token_is_valid (c->manifest_sha256, 128))
                return refuse (error, "manifest sha256", "is not a hex digest");
        if (!check_path (c->kernel, "kernel", FALSE, error) ||
            !check_path (c->initrd, "initrd", FALSE, error) ||
            !check_path (c->disk, "disk", TRUE, error) ||
            !check_path (c->console_log, "console log", FALSE, error) ||
            !check_path (c->vm_dir, "VM folder", FALSE, error) ||
            !check_path (c->vnc_socket, "VNC socket", TRUE, error) ||
            !check_path (c->fs_socket, "shared-folder socket", TRUE, error) ||
            !check_path (c->net_socket, "network socket", TRUE, error))
                return FALSE;
        if (c->transport == CORRAL_TRANSPORT_VIRTIO_SERIAL &&
            !check_path (c->agent_socket, "agent socket", FALSE, error))
                return FALSE;
        if ((c->agent_socket && strlen (c->agent_socket) > CORRAL_SOCKET_PATH_MAX) ||
            (c->fs_socket && strlen (c->fs_socket) > CORRAL_SOCKET_PATH_MAX) ||
            (c->net_socket && strlen (c->net_socket) > CORRAL_SOCKET_PATH_MAX) ||
            (c->vnc_socket && strlen (c->vnc_socket) > CORRAL_SOCKET_PATH_MAX))
                return refuse (error, "socket path", "is longer than a unix socket allows");
        if (c->remote && (c->fs_shm_name || c->vnc_socket))
                return refuse (error, "remote VM",
                               "cannot have shared-folder memory or a VNC socket: both need "
                               "QEMU on this machine");
        if (!c->vnc_socket && (c->display_width || c->display_height || c->clipboard))
                return refuse (error, "screen", "needs the VNC socket (a VM without a screen)");
        if (c->vnc_socket && (display_width (c) < CORRAL_DISPLAY_MIN_WIDTH ||
                              display_width (c) > CORRAL_DISPLAY_MAX_WIDTH ||
                              display_height (c) < CORRAL_DISPLAY_MIN_HEIGHT ||
                              display_height (c) > CORRAL_DISPLAY_MAX_HEIGHT))
                return refuse (error, "screen size", "must be from 640x480 to 3840x2160");
        if (c->remote && c->transport != CORRAL_TRANSPORT_VIRTIO_SERIAL)
                return refuse (error, "remote VM", "needs the virtio-serial transport");
        if (c->fs_shm_name &&
            (!corral_domain_name_is_valid (c->fs_shm_name) || c->fs_shm_mib == 0 ||
             c->fs_shm_mib > 256 || (c->fs_shm_mib & (c->fs_shm_mib - 1)) != 0))
                return refuse (
                        error, "shared-folder memory",
                        "needs a name of A-Z a-z 0-9 _ . - and a power of two of 1 to 256 MiB");
        return TRUE;
}

/* The domain ------------------------------------------------------------------------------------ */

static void
write_metadata (XmlWriter *w, const CorralDomainConfig *c)
{
        xml_open (w, "metadata", NULL);
        xml_open (w, CORRAL_METADATA_PREFIX ":vm", "xmlns:" CORRAL_METADATA_PREFIX,
                  CORRAL_METADATA_NS, NULL);
        if (c->manifest_sha256)
                xml_empty (w, CORRAL_METADATA_PREFIX ":image", "name", c->image_name,
                           "manifest-sha256", c->manifest_sha256, NULL);
        else
                xml_empty (w, CORRAL_METADATA_PREFIX ":image", "name", c->image_name, NULL);
        xml_empty (w, CORRAL_METADATA_PREFIX ":transport", "type",
                   corral_transport_to_string (c->transport), NULL);
        xml_empty (w, CORRAL_METADATA_PREFIX ":accel", "type", corral_accel_to_string (c->accel),
                   NULL);
        xml_empty (w, CORRAL_METADATA_PREFIX ":dir", "path", c->vm_dir, NULL);
        if (c->agent_socket)
                xml_empty (w, CORRAL_METADATA_PREFIX ":agent-socket", "path", c->agent_socket,
                           NULL);
        xml_empty (w, CORRAL_METADATA_PREFIX ":console-log", "path", c->console_log, NULL);
        xml_close (w, CORRAL_METADATA_PREFIX ":vm");
        xml_close (w, "metadata");
}

static void
write_os (XmlWriter *w, const CorralDomainConfig *c)
{
        xml_open (w, "os", NULL);
        xml_text_attrs (w, "type", "hvm", "arch", "x86_64", "machine", "q35", NULL);
        xml_text (w, "kernel", c->kernel);
        xml_text (w, "initrd", c->initrd);
        xml_text (w, "cmdline", c->cmdline);
        xml_close (w, "os");
}

/* A virtio-serial port on a unix socket QEMU listens on: ours here, libvirt's over there. */
static void
write_channel (XmlWriter *w, const CorralDomainConfig *c, const char *path, const char *port)
{
        xml_open (w, "channel", "type", "unix", NULL);
        if (c->remote)
                xml_empty (w, "source", "mode", "bind", NULL);
        else
                xml_empty (w, "source", "mode", "bind", "path", path, NULL);
        xml_empty (w, "target", "type", "virtio", "name", port, NULL);
        xml_close (w, "channel");
}

/* The screen (see CorralDomainConfig.vnc_socket). */
static void
write_display (XmlWriter *w, const CorralDomainConfig *c)
{
        g_autofree char *x = g_strdup_printf ("%u", display_width (c));
        g_autofree char *y = g_strdup_printf ("%u", display_height (c));

        /* Only Corral reaches it: a socket in the VM's folder, no TCP port, no password to
         * leak. Sound has nowhere to go (no audio backend, so none is captured or played). */
        xml_open (w, "graphics", "type", "vnc", "socket", c->vnc_socket, NULL);
        xml_empty (w, "audio", "id", "1", NULL);
        xml_close (w, "graphics");
        xml_empty (w, "audio", "id", "1", "type", "none", NULL);
        /* virtio-vga: the virtio GPU for Xorg's modesetting driver, with a VGA front for the
         * boot and for a kernel without virtio-gpu (bochs-drm's fallback). */
        xml_open (w, "video", NULL);
        xml_open (w, "model", "type", "virtio", "heads", "1", "primary", "yes", NULL);
        xml_empty (w, "resolution", "x", x, "y", y, NULL);
        xml_close (w, "model");
        xml_close (w, "video");
        /* An absolute pointer, so a click lands where it is aimed whatever the guest's mouse
         * acceleration; QEMU adds the PS/2 keyboard a VNC client's keys arrive on. */
        xml_empty (w, "controller", "type", "usb", "model", "qemu-xhci", NULL);
        xml_empty (w, "input", "type", "tablet", "bus", "usb", NULL);
        if (c->clipboard) {
                xml_open (w, "channel", "type", "qemu-vdagent", NULL);
                xml_open (w, "source", NULL);
                xml_empty (w, "clipboard", "copypaste", "yes", NULL);
                xml_empty (w, "mouse", "mode", "server", NULL);
                xml_close (w, "source");
                xml_empty (w, "target", "type", "virtio", "name", CORRAL_VDAGENT_PORT_NAME, NULL);
                xml_close (w, "channel");
        }
}

static void
write_devices (XmlWriter *w, const CorralDomainConfig *c)
{
        xml_open (w, "devices", NULL);
        if (c->disk) {
                xml_open (w, "disk", "type", "file", "device", "disk", NULL);
                xml_empty (w, "driver", "name", "qemu", "type", "qcow2", "discard", "unmap", NULL);
                xml_empty (w, "source", "file", c->disk, NULL);
                xml_empty (w, "target", "dev", "vda", "bus", "virtio", NULL);
                xml_close (w, "disk");
        }
        if (c->remote) {
                /* On another machine: a pty that corral-chanbridge copies into console_log. */
                xml_open (w, "serial", "type", "pty", NULL);
                xml_empty (w, "target", "port", "0", NULL);
                xml_close (w, "serial");
        } else {
                /* The serial console goes straight to a file: the tail is the crash report. */
                xml_open (w, "serial", "type", "file", NULL);
                xml_empty (w, "source", "path", c->console_log, "append", "on", NULL);
                xml_empty (w, "target", "port", "0", NULL);
                xml_close (w, "serial");
        }
        if (c->transport == CORRAL_TRANSPORT_VIRTIO_SERIAL)
                write_channel (w, c, c->agent_socket, CORRAL_AGENT_PORT_NAME);
        else {
                xml_open (w, "vsock", "model", "virtio", NULL);
                xml_empty (w, "cid", "auto", "yes", NULL);
                xml_close (w, "vsock");
        }
        if (c->fs_socket)
                write_channel (w, c, c->fs_socket, CORRAL_FS_PORT_NAME);
        /* The VM has no network card: this port to the host egress proxy is its way out. */
        if (c->net_socket)
                write_channel (w, c, c->net_socket, CORRAL_NET_PORT_NAME);
        if (c->fs_shm_name) {
                /* File contents of shared folders: memory QEMU and corral-fsd both map. */
                g_autofree char *mib = g_strdup_printf ("%u", c->fs_shm_mib);
                /* role='master': its contents are saved and restored with the VM (libvirt
                 * refuses to save or migrate other ivshmem devices). */
                xml_open (w, "shmem", "name", c->fs_shm_name, "role", "master", NULL);
                xml_empty (w, "model", "type", "ivshmem-plain", NULL);
                xml_text_attrs (w, "size", mib, "unit", "M", NULL);
                xml_close (w, "shmem");
        }
        if (c->vnc_socket)
                write_display (w, c);
        else
                xml_empty (w, "controller", "type", "usb", "model", "none", NULL);
        xml_empty (w, "memballoon", "model", "none", NULL);
        xml_open (w, "rng", "model", "virtio", NULL);
        xml_text_attrs (w, "backend", "/dev/urandom", "model", "random", NULL);
        xml_close (w, "rng");
        xml_close (w, "devices");
}

char *
corral_domain_xml_build (const CorralDomainConfig *c, GError **error)
{
        XmlWriter w = { g_string_new (NULL), 0 };
        g_autofree char *memory = NULL;
        g_autofree char *vcpus = NULL;

        g_return_val_if_fail (c != NULL, NULL);

        if (!check_config (c, error)) {
                g_string_free (w.out, TRUE);
                return NULL;
        }
        memory = g_strdup_printf ("%u", c->memory_mib);
        vcpus = g_strdup_printf ("%u", c->vcpus);
        xml_open (&w, "domain", "type", c->accel == CORRAL_ACCEL_KVM ? "kvm" : "qemu", NULL);
        xml_text (&w, "name", c->name);
        xml_text (&w, "uuid", c->uuid);
        write_metadata (&w, c);
        xml_text_attrs (&w, "memory", memory, "unit", "MiB", NULL);
        xml_text (&w, "vcpu", vcpus);
        write_os (&w, c);
        xml_open (&w, "features", NULL);
        xml_empty (&w, "acpi", NULL);
        xml_close (&w, "features");
        if (c->accel == CORRAL_ACCEL_KVM)
                xml_empty (&w, "cpu", "mode", "host-passthrough", NULL);
        xml_text (&w, "on_poweroff", "destroy");
        xml_text (&w, "on_reboot", "destroy");
        xml_text (&w, "on_crash", "destroy");
        write_devices (&w, c);
        if (c->qemu_as_root) {
                xml_open (&w, "seclabel", "type", "static", "model", "dac", "relabel", "no", NULL);
                xml_text (&w, "label", "+0:+0");
                xml_close (&w, "seclabel");
        }
        xml_close (&w, "domain");
        return g_string_free (w.out, FALSE);
}

/* Reading the metadata back ------------------------------------------------------------------ */

void
corral_domain_metadata_free (CorralDomainMetadata *meta)
{
        if (!meta)
                return;
        g_free (meta->image_name);
        g_free (meta->manifest_sha256);
        g_free (meta->transport);
        g_free (meta->accel);
        g_free (meta->agent_socket);
        g_free (meta->console_log);
        g_free (meta->vm_dir);
        g_free (meta);
}

static const char *
find_attr (const char **names, const char **values, const char *wanted)
{
        for (gsize i = 0; names[i]; i++)
                if (strcmp (names[i], wanted) == 0)
                        return values[i];
        return NULL;
}

static void
set_once (char **field, const char *value)
{
        if (value && !*field)
                *field = g_strdup (value);
}

static void
meta_start (GMarkupParseContext *context,
            const char *element,
            const char **names,
            const char **values,
            gpointer user_data,
            GError **error)
{
        CorralDomainMetadata *meta = user_data;
        const char *colon = strchr (element, ':');
        const char *local = colon ? colon + 1 : element;
        const char *path = find_attr (names, values, "path");

        if (strcmp (local, "image") == 0) {
                set_once (&meta->image_name, find_attr (names, values, "name"));
                set_once (&meta->manifest_sha256, find_attr (names, values, "manifest-sha256"));
        } else if (strcmp (local, "transport") == 0) {
                set_once (&meta->transport, find_attr (names, values, "type"));
        } else if (strcmp (local, "accel") == 0) {
                set_once (&meta->accel, find_attr (names, values, "type"));
        } else if (strcmp (local, "dir") == 0 && corral_domain_path_is_valid (path)) {
                set_once (&meta->vm_dir, path);
        } else if (strcmp (local, "agent-socket") == 0 && corral_domain_path_is_valid (path)) {
                set_once (&meta->agent_socket, path);
        } else if (strcmp (local, "console-log") == 0 && corral_domain_path_is_valid (path)) {
                set_once (&meta->console_log, path);
        }
}

CorralDomainMetadata *
corral_domain_metadata_parse (const char *xml, GError **error)
{
        static const GMarkupParser parser = { meta_start, NULL, NULL, NULL, NULL };
        g_autoptr (CorralDomainMetadata) meta = g_new0 (CorralDomainMetadata, 1);
        g_autoptr (GMarkupParseContext) ctx = NULL;

        g_return_val_if_fail (xml != NULL, NULL);

        if (strlen (xml) > 64 * 1024) {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     "domain metadata is too large");
                return NULL;
        }
        ctx = g_markup_parse_context_new (&parser, 0, meta, NULL);
        if (!g_markup_parse_context_parse (ctx, xml, -1, error) ||
            !g_markup_parse_context_end_parse (ctx, error))
                return NULL;
        return g_steal_pointer (&meta);
}
