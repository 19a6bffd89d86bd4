/* egress-cred.c — credential bindings and placeholders (see egress-cred.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-cred.h"
#include "egress-cred-private.h"
#include "egress-mask.h"

#include <glib/gi18n.h>
#include <string.h>
#include <sys/random.h>

struct _CorralEgressCredentials {
        GMutex lock;
        GPtrArray *bindings; /* of EgressBinding */
        EgressMask *mask; /* (nullable) every binding's secret, id = index; made on first use */
};

static void
binding_free (gpointer p)
{
        EgressBinding *b = p;

        corral_secret_info_free (b->info);
        corral_secret_value_free (b->secret);
        explicit_bzero (b->placeholder, sizeof b->placeholder);
        g_free (b);
}

CorralEgressCredentials *
corral_egress_credentials_new (void)
{
        CorralEgressCredentials *c = g_atomic_rc_box_new0 (CorralEgressCredentials);

        g_mutex_init (&c->lock);
        c->bindings = g_ptr_array_new_with_free_func (binding_free);
        return c;
}

CorralEgressCredentials *
corral_egress_credentials_ref (CorralEgressCredentials *creds)
{
        return g_atomic_rc_box_acquire (creds);
}

static void
creds_clear (gpointer data)
{
        CorralEgressCredentials *c = data;

        g_ptr_array_unref (c->bindings);
        egress_mask_unref (c->mask);
        g_mutex_clear (&c->lock);
}

void
corral_egress_credentials_unref (CorralEgressCredentials *creds)
{
        if (creds)
                g_atomic_rc_box_release_full (creds, creds_clear);
}

static void
new_placeholder (char out[CORRAL_PLACEHOLDER_LEN + 1])
{
        guint8 raw[16];
        gsize off = strlen (CORRAL_PLACEHOLDER_PREFIX);

        if (getrandom (raw, sizeof raw, 0) != sizeof raw)
                g_error ("getrandom failed"); /* never continue with a guessable token */
        memcpy (out, CORRAL_PLACEHOLDER_PREFIX, off);
        for (gsize i = 0; i < sizeof raw; i++)
                g_snprintf (out + off + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero (raw, sizeof raw);
}

char *
corral_egress_credentials_add (CorralEgressCredentials *creds,
                               const CorralSecretInfo *info,
                               const char *value)
{
        EgressBinding *b = g_new0 (EgressBinding, 1);

        b->info = corral_secret_info_new (info->name, (const char *const *) info->hosts,
                                          info->header, info->format, NULL);
        g_return_val_if_fail (b->info != NULL, NULL);
        b->secret = g_strdup (value);
        new_placeholder (b->placeholder);
        g_mutex_lock (&creds->lock);
        g_ptr_array_add (creds->bindings, b);
        g_clear_pointer (&creds->mask, egress_mask_unref);
        g_mutex_unlock (&creds->lock);
        return g_strdup (b->placeholder);
}

/* The organisation's binding for name (credentials.bindings), or NULL. */
static const cJSON *
managed_binding (CorralPolicy *managed, const char *name)
{
        const cJSON *list = NULL, *item;
        CorralPolicySetting how;

        if (!corral_policy_get_objects (managed, "credentials.bindings", &list, &how) ||
            !how.locked)
                return NULL;
        cJSON_ArrayForEach (item, list) {
                if (g_strcmp0 (
                            cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (item, "name")),
                            name) == 0)
                        return item;
        }
        return NULL;
}

/* A binding's host as the policy's host patterns read it: "name:port" (443 when unnamed). */
static char *
host_candidate (const char *host)
{
        return strchr (host, ':') ? g_strdup (host) : g_strdup_printf ("%s:443", host);
}

CorralSecretInfo *
corral_egress_credentials_apply_policy (CorralPolicy *managed,
                                        const CorralSecretInfo *info,
                                        GError **error)
{
        const cJSON *binding = NULL, *h;
        g_autoptr (GStrvBuilder) kept = g_strv_builder_new ();
        g_auto (GStrv) hosts = NULL, wanted = NULL;
        const char *header = info->header;
        g_autoptr (GError) local = NULL;
        CorralSecretInfo *out;

        if (!managed)
                return corral_secret_info_new (info->name, (const char *const *) info->hosts,
                                               info->header, info->format, error);
        if (!corral_policy_allows (managed, "credentials.allowedNames", info->name, error))
                return NULL;
        if ((binding = managed_binding (managed, info->name))) {
                g_autoptr (GStrvBuilder) b = g_strv_builder_new ();

                cJSON_ArrayForEach (h, cJSON_GetObjectItemCaseSensitive (binding, "hosts"))
                        g_strv_builder_add (b, cJSON_GetStringValue (h));
                wanted = g_strv_builder_end (b);
                if (cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (binding, "header")))
                        header = cJSON_GetStringValue (
                                cJSON_GetObjectItemCaseSensitive (binding, "header"));
        } else {
                wanted = g_strdupv (info->hosts);
        }
        for (char **w = wanted; *w; w++) {
                g_autofree char *candidate = host_candidate (*w);

                if (corral_policy_allows (managed, "credentials.allowedHosts", candidate,
                                          local ? NULL : &local))
                        g_strv_builder_add (kept, *w);
        }
        hosts = g_strv_builder_end (kept);
        if (!hosts[0]) {
                g_propagate_error (error, g_steal_pointer (&local));
                return NULL;
        }
        out = corral_secret_info_new (info->name, (const char *const *) hosts, header, info->format,
                                      error);
        return out;
}

gboolean
corral_egress_credentials_add_from_keychain (CorralEgressCredentials *creds,
                                             const char *const *names,
                                             CorralPolicy *managed,
                                             GStrv *ret_refused,
                                             GCancellable *cancellable,
                                             GError **error)
{
        g_autoptr (GPtrArray) values =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_secret_value_free);
        g_autoptr (GPtrArray) infos =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_secret_info_free);
        g_autoptr (GStrvBuilder) refused = g_strv_builder_new ();

        for (const char *const *n = names; *n; n++) {
                g_autoptr (CorralSecretInfo) info = NULL;
                g_autoptr (GError) why = NULL;
                CorralSecretInfo *allowed;
                char *value = corral_secret_store_lookup_sync (*n, &info, cancellable, error);

                if (!value)
                        return FALSE;
                if (!(allowed = corral_egress_credentials_apply_policy (managed, info, &why))) {
                        g_autofree char *line =
                                g_strdup_printf (_ ("The secret “%s” is not available in the "
                                                    "VM: %s"),
                                                 *n, why ? why->message : "");
                        g_strv_builder_add (refused, line);
                        corral_secret_value_free (value);
                        continue;
                }
                g_ptr_array_add (values, value);
                g_ptr_array_add (infos, allowed);
        }
        if (ret_refused)
                *ret_refused = g_strv_builder_end (refused);
        for (guint i = 0; i < infos->len; i++)
                g_free (corral_egress_credentials_add (creds, infos->pdata[i], values->pdata[i]));
        return TRUE;
}

char **
corral_egress_credentials_dup_environ (CorralEgressCredentials *creds)
{
        GPtrArray *env = g_ptr_array_new ();

        g_mutex_lock (&creds->lock);
        for (guint i = 0; i < creds->bindings->len; i++) {
                EgressBinding *b = g_ptr_array_index (creds->bindings, i);

                g_ptr_array_add (env, g_strdup_printf ("%s=%s", b->info->name, b->placeholder));
        }
        g_mutex_unlock (&creds->lock);
        g_ptr_array_add (env, NULL);
        return (char **) g_ptr_array_free (env, FALSE);
}

/* A binding names host and port: "name" is port 443, "name:port" another one. */
static gboolean
binds (const EgressBinding *b, const char *host, guint16 port)
{
        for (char **h = b->info->hosts; *h; h++) {
                g_autofree char *name = NULL;
                CorralHostKind kind;
                guint16 p;

                if (corral_egress_parse_authority (*h, -1, CORRAL_SECRET_DEFAULT_PORT, &kind, &name,
                                                   &p, NULL) &&
                    p == port && g_str_equal (name, host))
                        return TRUE;
        }
        return FALSE;
}

gboolean
corral_egress_credentials_binds_host (CorralEgressCredentials *creds,
                                      const char *host,
                                      guint16 port)
{
        gboolean found = FALSE;

        g_mutex_lock (&creds->lock);
        for (guint i = 0; i < creds->bindings->len && !found; i++)
                found = binds (g_ptr_array_index (creds->bindings, i), host, port);
        g_mutex_unlock (&creds->lock);
        return found;
}

void
corral_egress_credentials_revoke (CorralEgressCredentials *creds)
{
        g_mutex_lock (&creds->lock);
        g_ptr_array_set_size (creds->bindings, 0);
        g_clear_pointer (&creds->mask, egress_mask_unref);
        g_mutex_unlock (&creds->lock);
}

/* For the proxy (egress-cred-private.h) ------------------------------------------------------- */

EgressBinding *
_egress_credentials_find (CorralEgressCredentials *creds, const char *placeholder, gsize len)
{
        EgressBinding *found = NULL;

        if (len != CORRAL_PLACEHOLDER_LEN)
                return NULL;
        g_mutex_lock (&creds->lock);
        for (guint i = 0; i < creds->bindings->len && !found; i++) {
                EgressBinding *b = g_ptr_array_index (creds->bindings, i);

                if (memcmp (b->placeholder, placeholder, len) == 0)
                        found = _egress_binding_copy (b);
        }
        g_mutex_unlock (&creds->lock);
        return found;
}

EgressBinding *
_egress_binding_copy (const EgressBinding *b)
{
        EgressBinding *c = g_new0 (EgressBinding, 1);

        c->info = corral_secret_info_new (b->info->name, (const char *const *) b->info->hosts,
                                          b->info->header, b->info->format, NULL);
        c->secret = g_strdup (b->secret);
        memcpy (c->placeholder, b->placeholder, sizeof c->placeholder);
        return c;
}

void
_egress_binding_free (EgressBinding *b)
{
        if (b)
                binding_free (b);
}

gboolean
_egress_binding_for_host (const EgressBinding *b, const char *host, guint16 port)
{
        return binds (b, host, port);
}

EgressMask *
_egress_credentials_dup_mask (CorralEgressCredentials *creds)
{
        EgressMask *mask;

        g_mutex_lock (&creds->lock);
        if (!creds->mask) {
                creds->mask = egress_mask_new ();
                for (guint i = 0; i < creds->bindings->len; i++)
                        egress_mask_add_secret (
                                creds->mask, ((EgressBinding *) creds->bindings->pdata[i])->secret,
                                i);
        }
        mask = egress_mask_ref (creds->mask);
        g_mutex_unlock (&creds->lock);
        return mask;
}

char *
_egress_credentials_dup_name (CorralEgressCredentials *creds, guint index)
{
        char *name = NULL;

        g_mutex_lock (&creds->lock);
        if (index < creds->bindings->len)
                name = g_strdup (((EgressBinding *) creds->bindings->pdata[index])->info->name);
        g_mutex_unlock (&creds->lock);
        return name;
}
