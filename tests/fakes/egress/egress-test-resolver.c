/* egress-test-resolver.c — a GResolver answering from a table (see egress-test.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-test.h"

struct _EgressTestResolver {
        GResolver parent_instance;
        GMutex lock;
        GHashTable *answers; /* name -> GPtrArray of char* (comma lists) */
        GHashTable *next; /* name -> index of the next answer */
        guint lookups;
};

G_DEFINE_FINAL_TYPE (EgressTestResolver, egress_test_resolver, G_TYPE_RESOLVER)

static GList *
lookup (GResolver *resolver, const char *name, GCancellable *cancellable, GError **error)
{
        EgressTestResolver *self = EGRESS_TEST_RESOLVER (resolver);
        GPtrArray *answers;
        GList *list = NULL;

        g_mutex_lock (&self->lock);
        self->lookups++;
        answers = g_hash_table_lookup (self->answers, name);
        if (answers) {
                guint i = GPOINTER_TO_UINT (g_hash_table_lookup (self->next, name));
                g_auto (GStrv) addrs =
                        g_strsplit (g_ptr_array_index (answers, i % answers->len), ",", -1);

                g_hash_table_insert (self->next, g_strdup (name), GUINT_TO_POINTER (i + 1));
                for (char **a = addrs; *a; a++)
                        list = g_list_append (list, g_inet_address_new_from_string (*a));
        }
        g_mutex_unlock (&self->lock);
        if (!list)
                g_set_error (error, G_RESOLVER_ERROR, G_RESOLVER_ERROR_NOT_FOUND,
                             "no address for %s (test resolver)", name);
        return list;
}

static void
lookup_async (GResolver *resolver,
              const char *name,
              GCancellable *cancellable,
              GAsyncReadyCallback callback,
              gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (resolver, cancellable, callback, user_data);
        GError *error = NULL;
        GList *list = lookup (resolver, name, cancellable, &error);

        if (list)
                g_task_return_pointer (task, list, (GDestroyNotify) g_resolver_free_addresses);
        else
                g_task_return_error (task, error);
}

static GList *
lookup_finish (GResolver *resolver, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
egress_test_resolver_finalize (GObject *object)
{
        EgressTestResolver *self = EGRESS_TEST_RESOLVER (object);

        g_hash_table_unref (self->answers);
        g_hash_table_unref (self->next);
        g_mutex_clear (&self->lock);
        G_OBJECT_CLASS (egress_test_resolver_parent_class)->finalize (object);
}

static void
egress_test_resolver_class_init (EgressTestResolverClass *klass)
{
        GResolverClass *rc = G_RESOLVER_CLASS (klass);

        G_OBJECT_CLASS (klass)->finalize = egress_test_resolver_finalize;
        rc->lookup_by_name = lookup;
        rc->lookup_by_name_async = lookup_async;
        rc->lookup_by_name_finish = lookup_finish;
}

static void
egress_test_resolver_init (EgressTestResolver *self)
{
        g_mutex_init (&self->lock);
        self->answers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                               (GDestroyNotify) g_ptr_array_unref);
        self->next = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
}

EgressTestResolver *
egress_test_resolver_new (void)
{
        return g_object_new (EGRESS_TYPE_TEST_RESOLVER, NULL);
}

void
egress_test_resolver_add (EgressTestResolver *self, const char *name, const char *addresses)
{
        GPtrArray *answers;

        g_mutex_lock (&self->lock);
        answers = g_hash_table_lookup (self->answers, name);
        if (!answers) {
                answers = g_ptr_array_new_with_free_func (g_free);
                g_hash_table_insert (self->answers, g_strdup (name), answers);
        }
        g_ptr_array_add (answers, g_strdup (addresses));
        g_mutex_unlock (&self->lock);
}

guint
egress_test_resolver_get_lookups (EgressTestResolver *self)
{
        guint n;

        g_mutex_lock (&self->lock);
        n = self->lookups;
        g_mutex_unlock (&self->lock);
        return n;
}
