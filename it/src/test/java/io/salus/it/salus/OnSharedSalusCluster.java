package io.salus.it.salus;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A test class that runs on {@link SalusMiniCluster#shared()}: tagged {@value SalusMiniCluster#SHARED_TAG} (it/pom.xml
 * runs these classes one after another in one JVM of their own) and shutting the shared cluster down after the last
 * of them ({@link SalusMiniCluster.SharedShutdown}). Only for classes that configure nothing of their own.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(SalusMiniCluster.SHARED_TAG)
@ExtendWith(SalusMiniCluster.SharedShutdown.class)
@interface OnSharedSalusCluster {
}
