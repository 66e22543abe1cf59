package io.salus.core.protocol.client;

/** A block write requested by the application. */
public record BlockWrite(long block, byte[] data) {
}
