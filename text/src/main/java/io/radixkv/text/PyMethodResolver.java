package io.radixkv.text;

import java.beans.FeatureDescriptor;
import java.util.Iterator;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Resolves method calls on strings to Python's str methods ({@link PyStr}), ahead of
 * Jinjava's own resolvers. Read-only: it resolves no properties.
 */
final class PyMethodResolver extends ELResolver {

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (base instanceof CharSequence s && method != null && PyStr.supports(method.toString())) {
            context.setPropertyResolved(true);
            return PyStr.call(s.toString(), method.toString(), params == null ? new Object[0] : params);
        }
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return true;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
        // read-only: nothing resolved here
    }
}
