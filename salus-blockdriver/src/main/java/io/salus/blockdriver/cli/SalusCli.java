package io.salus.blockdriver.cli;

public final class SalusCli {
  public static void main(String[] args) { }
}
